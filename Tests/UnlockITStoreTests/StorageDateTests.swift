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
}
