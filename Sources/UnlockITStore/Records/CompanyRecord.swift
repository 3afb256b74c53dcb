import Foundation
import GRDB
import UnlockITCore

struct CompanyRecord: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "company"
    var id: String
    var name: String
    var createdAt: Date

    init(_ company: Company) {
        id = company.id.rawValue
        name = company.name
        createdAt = company.createdAt
    }

    var company: Company { Company(id: CompanyID(unchecked: id), name: name, createdAt: createdAt) }
}
