import Foundation

/// A tenant. Nothing crosses companies.
public struct Company: Sendable, Equatable, Codable {
    public var id: CompanyID
    public var name: String
    public var createdAt: Date

    public init(id: CompanyID, name: String, createdAt: Date) {
        self.id = id
        self.name = name
        self.createdAt = createdAt
    }
}
