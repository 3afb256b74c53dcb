import Foundation
import Glibc

/// A date as GRDB stores it, `yyyy-MM-dd HH:mm:ss.SSS` in UTC rounded to the millisecond,
/// written and read without Foundation's `DateFormatter` and `Calendar`: on the unlock path (the
/// audit event's time, the session's and the lock's dates) they cost more than the queries.
/// `StorageDateTests` checks both directions against GRDB.
enum StorageDate {
    static func text(_ date: Date) -> String {
        let milliseconds = (date.timeIntervalSince1970 * 1000).rounded()
        var seconds = time_t((milliseconds / 1000).rounded(.down))
        let fraction = Int(milliseconds - Double(seconds) * 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(unsafeUninitializedCapacity: 23) { buffer in
            var index = 0
            func put(_ value: Int, digits: Int) {
                var value = value
                for position in stride(from: digits - 1, through: 0, by: -1) {
                    buffer[index + position] = UInt8(ascii: "0") + UInt8(value % 10)
                    value /= 10
                }
                index += digits
            }
            func put(_ separator: Unicode.Scalar) {
                buffer[index] = UInt8(ascii: separator)
                index += 1
            }
            put(Int(parts.tm_year) + 1900, digits: 4)
            put("-")
            put(Int(parts.tm_mon) + 1, digits: 2)
            put("-")
            put(Int(parts.tm_mday), digits: 2)
            put(" ")
            put(Int(parts.tm_hour), digits: 2)
            put(":")
            put(Int(parts.tm_min), digits: 2)
            put(":")
            put(Int(parts.tm_sec), digits: 2)
            put(".")
            put(fraction, digits: 3)
            return index
        }
    }

    /// The date in `text` if it is exactly in the storage format and names a real time of a real
    /// day since the Gregorian calendar began (1583); otherwise nil, and the caller leaves the text
    /// to GRDB's own decoding (whose calendar is Julian before October 1582).
    static func date(_ text: UnsafeBufferPointer<UInt8>) -> Date? {
        guard text.count == 23 else { return nil }
        var index = 0
        func number(_ digits: Int) -> Int? {
            var value = 0
            for _ in 0..<digits {
                let digit = Int(text[index]) - Int(UInt8(ascii: "0"))
                guard (0...9).contains(digit) else { return nil }
                value = value * 10 + digit
                index += 1
            }
            return value
        }
        func separator(_ expected: Unicode.Scalar) -> Bool {
            defer { index += 1 }
            return text[index] == UInt8(ascii: expected)
        }
        guard let year = number(4), separator("-"), let month = number(2), separator("-"), let day = number(2), separator(" "),
            let hour = number(2), separator(":"), let minute = number(2), separator(":"), let second = number(2), separator("."),
            let millisecond = number(3)
        else { return nil }
        guard year >= 1583, (1...12).contains(month), (1...daysIn(month: month, of: year)).contains(day), hour < 24, minute < 60,
            second < 60
        else {
            return nil
        }
        let days = daysSinceEpoch(year: year, month: month, day: day)
        let seconds = ((days * 24 + hour) * 60 + minute) * 60 + second
        // Counted from 2001 as `Date` stores it. GRDB's calendar gives the same value but for, now
        // and then, the last bit (`StorageDateTests`).
        let sinceReferenceDate = seconds - Int(Date.timeIntervalBetween1970AndReferenceDate)
        return Date(timeIntervalSinceReferenceDate: TimeInterval(sinceReferenceDate) + TimeInterval(millisecond) / 1000)
    }

    private static func daysIn(month: Int, of year: Int) -> Int {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days from 1970-01-01 to a day of the Gregorian calendar: counted in 400-year eras from
    /// 0000-03-01, so that a leap day ends its year.
    private static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
        let marchYear = month <= 2 ? year - 1 : year
        let era = (marchYear >= 0 ? marchYear : marchYear - 399) / 400
        let yearOfEra = marchYear - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
