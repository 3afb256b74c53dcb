/// Why a field's value was refused, in words meant for the client (`is not a valid id`), carried as
/// a `DecodingError`'s underlying error. The server answers with it; any other decoding failure's
/// text is Foundation's own (a Swift type's name, an internal phrasing), which it never repeats.
public struct InvalidValue: Error, Sendable, Equatable {
    public let reason: String

    public init(_ reason: String) { self.reason = reason }

    /// The error a `Decodable` throws for a value it cannot take.
    public static func decodingError(_ reason: String, _ decoder: any Decoder) -> DecodingError {
        .dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: reason, underlyingError: InvalidValue(reason)))
    }
}

extension RawRepresentable where Self: CaseIterable, RawValue == String {
    /// One of the cases' names; anything else is refused with the names it may be.
    public static func decodeChoice(from decoder: any Decoder) throws -> Self {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let value = Self(rawValue: text) else {
            throw InvalidValue.decodingError("must be one of " + allCases.map(\.rawValue).joined(separator: ", "), decoder)
        }
        return value
    }
}
