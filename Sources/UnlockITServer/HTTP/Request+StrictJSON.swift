import Foundation
import Hummingbird
import NIOCore
import UnlockITCore

/// A request body type that names its fields, so that a misspelt field is an error rather than
/// silently ignored.
protocol RequestBody: Decodable, Sendable {
    static var fields: Set<String> { get }
    /// The fields that may be `null`, where `null` means something of its own (a room's
    /// `requiredLevel`: only authorized users). Any other field sent as `null` is refused: it would
    /// otherwise read as absent, and a client that meant to clear it would be told it succeeded.
    static var nullableFields: Set<String> { get }
    /// For a field that holds a list of objects (an import's rows): the fields each object may have.
    static var rowFields: [String: Set<String>] { get }
}

extension RequestBody {
    static var nullableFields: Set<String> { [] }
    static var rowFields: [String: Set<String>] { [:] }
}

extension Request {
    /// Decodes a JSON object body, refusing unknown fields, malformed JSON and oversized bodies.
    func decodeStrict<Body: RequestBody>(_ type: Body.Type, context: AppContext) async throws -> Body {
        let buffer = try await body.collect(upTo: context.maxUploadSize)
        let data = Data(buffer.readableBytesView)
        guard let object = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) else { throw APIError.malformedJSON }
        guard let fields = object as? [String: Any] else { throw APIError.invalidRequest("the body must be a JSON object") }
        if let unknown = fields.keys.sorted().first(where: { !Body.fields.contains($0) }) {
            throw APIError.unknownField(String(unknown.prefix(64)))
        }
        if let null = fields.keys.sorted().first(where: { fields[$0] is NSNull && !Body.nullableFields.contains($0) }) {
            throw APIError.invalidField(null, "must not be null")
        }
        for (list, allowed) in Body.rowFields.sorted(by: { $0.key < $1.key }) {
            guard let rows = fields[list] as? [Any] else { continue }
            for (index, row) in rows.enumerated() {
                guard let row = row as? [String: Any] else { continue }  // the decoder reports the wrong type
                if let unknown = row.keys.sorted().first(where: { !allowed.contains($0) }) {
                    throw APIError.unknownField("\(list)[\(index)].\(unknown.prefix(64))")
                }
                if let null = row.keys.sorted().first(where: { row[$0] is NSNull }) {
                    throw APIError.invalidField("\(list)[\(index)].\(null)", "must not be null")
                }
            }
        }
        do {
            return try APIJSON.decoder.decode(Body.self, from: data)
        } catch DecodingError.dataCorrupted(let context) where context.codingPath.isEmpty {
            // The body was read as JSON above, so it is JSON. Foundation's decoder says otherwise,
            // and names no field, when a number does not fit a field's type: 1.5, or 10^20, for a
            // whole number.
            throw APIError.invalidField("body", "has a number its field cannot hold: every number here is a whole number")
        }
    }
}

/// A field of a PATCH body: absent (leave as is), or present with a value (which may be `null`).
enum Patch<Value: Decodable & Sendable>: Sendable {
    case absent
    case value(Value)

    var value: Value? {
        if case .value(let value) = self { return value }
        return nil
    }
}

extension KeyedDecodingContainer {
    func decodePatch<Value: Decodable & Sendable>(_ type: Value.Type, forKey key: Key) throws -> Patch<Value> {
        guard contains(key) else { return .absent }
        return .value(try decode(Value.self, forKey: key))
    }
}
