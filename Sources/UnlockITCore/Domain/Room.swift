import Foundation

public enum RoomType: String, Sendable, Codable, CaseIterable {
    case office
    case meeting
    case silent
    case cafeteria
    case other

    public init(from decoder: any Decoder) throws { self = try Self.decodeChoice(from: decoder) }
}

/// A room of a company, with the clearance its locks require.
public struct Room: Sendable, Equatable {
    public var id: RoomID
    public var companyID: CompanyID
    /// Unique within the company.
    public var name: String
    public var description: String
    public var type: RoomType
    public var bookable: Bool
    /// The security level that opens this room's locks; `nil` means only the authorized users may enter.
    public var requiredLevel: Int?
    /// Users who may enter regardless of their level.
    public var authorizedUsers: Set<UserID>
    public var createdAt: Date
    public var updatedAt: Date

    public init(
        id: RoomID, companyID: CompanyID, name: String, description: String, type: RoomType, bookable: Bool, requiredLevel: Int?,
        authorizedUsers: Set<UserID>, createdAt: Date, updatedAt: Date
    ) {
        self.id = id
        self.companyID = companyID
        self.name = name
        self.description = description
        self.type = type
        self.bookable = bookable
        self.requiredLevel = requiredLevel
        self.authorizedUsers = authorizedUsers
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}
