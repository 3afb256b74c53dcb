import Foundation
import Glibc

/// A date as GRDB stores it, `yyyy-MM-dd HH:mm:ss.SSS` in UTC rounded to the millisecond,
/// written without Foundation's `DateFormatter`: on the unlock path (the audit event's time) the
/// formatter cost more than the insert itself. `StorageDateTests` checks it against GRDB.
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
}
