import Foundation

/// An opaque identifier: a lowercase UUID string, which is how ids appear in the API.
public protocol UUIDIdentifier: Sendable, Hashable, Codable, CustomStringConvertible, Comparable {
    var rawValue: String { get }
    init(unchecked rawValue: String)
}

extension UUIDIdentifier {
    /// Parses an id from the API; `nil` unless it is a UUID. Uppercase input is normalised.
    public init?(_ text: String) {
        guard text.utf8.count == 36, let uuid = UUID(uuidString: text) else { return nil }
        self.init(unchecked: uuid.uuidString.lowercased())
    }

    /// A new random (version 4) id.
    public static func generate() -> Self { Self(unchecked: UUID().uuidString.lowercased()) }

    public var description: String { rawValue }
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let id = Self(text) else {
            throw InvalidValue.decodingError("is not a valid id", decoder)
        }
        self = id
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

public struct CompanyID: UUIDIdentifier {
    public let rawValue: String
    public init(unchecked rawValue: String) { self.rawValue = rawValue }
}

public struct UserID: UUIDIdentifier {
    public let rawValue: String
    public init(unchecked rawValue: String) { self.rawValue = rawValue }
}

public struct RoomID: UUIDIdentifier {
    public let rawValue: String
    public init(unchecked rawValue: String) { self.rawValue = rawValue }
}
