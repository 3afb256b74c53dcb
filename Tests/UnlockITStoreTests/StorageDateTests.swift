import Foundation
import GRDB
import Testing

@testable import UnlockITStore

@Suite struct StorageDateTests {
    @Test("The fast formatter writes exactly what GRDB writes for a date")
    func agreesWithGRDB() {
        var generator = SystemRandomNumberGenerator()
        var dates = [
            Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: 1_800_000_000), Date(timeIntervalSince1970: 1_800_000_000.9999),
            Date(timeIntervalSince1970: 951_782_400.001),  // 2000-02-29
            Date(timeIntervalSince1970: 4_102_444_799.999),  // 2099-12-31 23:59:59.999
        ]
        for _ in 0..<10_000 { dates.append(Date(timeIntervalSince1970: Double.random(in: 0..<4_102_444_800, using: &generator))) }
        let mismatches = dates.filter { StorageDate.text($0) != String.fromDatabaseValue($0.databaseValue) }
        let shown = mismatches.prefix(5).map {
            "\($0.timeIntervalSince1970): \(StorageDate.text($0)) vs \(String.fromDatabaseValue($0.databaseValue) ?? "-")"
        }
        #expect(mismatches.isEmpty, "\(mismatches.count) differ, e.g. \(shown)")
    }

    /// GRDB reads through Foundation's calendar, which now and then rounds the last bit of the
    /// interval the other way (for one or two dates in 10,000 here): far below the millisecond stored.
    @Test("The fast parser reads the storage format as GRDB does, and what it reads is written back unchanged")
    func readsAsGRDBDoes() {
        var generator = SystemRandomNumberGenerator()
        var dates = [
            Date(timeIntervalSince1970: 0), Date(timeIntervalSinceReferenceDate: 0), Date(timeIntervalSince1970: 951_782_400.001),
            Date(timeIntervalSince1970: -2_208_988_800), Date(timeIntervalSince1970: 4_102_444_799.999),
        ]
        for _ in 0..<20_000 {
            dates.append(Date(timeIntervalSince1970: Double.random(in: -2_208_988_800..<4_102_444_800, using: &generator)))  // 1900...2099
        }
        let texts = dates.map { StorageDate.text($0) }
        let far = texts.filter { text in
            guard let parsed = parse(text), let expected = Date.fromDatabaseValue(text.databaseValue) else { return true }
            return abs(parsed.timeIntervalSince(expected)) > 1e-6
        }
        #expect(far.count == 0, "e.g. \(far.prefix(5))")
        let changed = texts.filter { text in parse(text).map { StorageDate.text($0) } != text }
        #expect(changed.count == 0, "e.g. \(changed.prefix(5))")
    }

    func parse(_ text: String) -> Date? {
        Array(text.utf8).withUnsafeBufferPointer { StorageDate.date($0) }
    }

    @Test(
        "Anything but a real time in the storage format is left to GRDB",
        arguments: [
            "2026-02-29 12:00:00.000", "2026-04-31 12:00:00.000", "2026-13-01 12:00:00.000", "2026-00-10 12:00:00.000",
            "2026-01-00 12:00:00.000", "2026-01-01 24:00:00.000", "2026-01-01 12:60:00.000", "2026-01-01 12:00:60.000",
            "2026-01-01T12:00:00.000", "2026-01-01 12:00:00", "2026-01-01", "2026-01-01 12:00:00.0000", "2026-01-01 12:00:00.00a",
            "+026-01-01 12:00:00.000", "2026/01/01 12:00:00.000", "",
            "1582-10-20 12:00:00.000", "0000-03-01 00:00:00.000",  // Julian in GRDB's calendar
        ])
    func refusesWhatIsNotTheStorageFormat(_ text: String) {
        #expect(parse(text) == nil)
    }

    @Test("A leap day is read as one")
    func leapDay() {
        let text = "2024-02-29 23:59:59.999"
        #expect(parse(text) == Date.fromDatabaseValue(text.databaseValue))
        #expect(StorageDate.text(Date.fromDatabaseValue(text.databaseValue)!) == text)
    }
}
