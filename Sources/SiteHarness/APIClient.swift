import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// A small JSON client for the server's API in tests.
public struct APIClient: Sendable {
    public let baseURL: String

    public init(baseURL: String) { self.baseURL = baseURL }

    public struct Reply: Sendable, CustomStringConvertible {
        public let status: Int
        public let body: Data
        public let contentType: String?

        /// The body as a JSON object (empty if it is not one).
        public var json: [String: any Sendable] { (try? JSONSerialization.jsonObject(with: body) as? [String: any Sendable]) ?? [:] }
        public var items: [[String: any Sendable]] { json["items"] as? [[String: any Sendable]] ?? [] }
        public func string(_ key: String) -> String? { json[key] as? String }
        public var code: String? { string("code") }
        public var text: String { String(decoding: body, as: UTF8.self) }
        public var description: String { "\(status) \(text.prefix(500))" }
    }

    public func call(
        _ method: String, _ path: String, token: String? = nil, json: [String: any Sendable]? = nil, raw: String? = nil,
        headers: [String: String] = [:]
    ) async throws -> Reply {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = HTTPMethod(rawValue: method)
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let json {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: json)))
        } else if let raw {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: raw))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 16 * 1024 * 1024)
        return Reply(status: Int(response.status.code), body: Data(body.readableBytesView), contentType: response.headers.first(name: "Content-Type"))
    }

    public func get(_ path: String, token: String? = nil) async throws -> Reply { try await call("GET", path, token: token) }
    public func post(_ path: String, token: String? = nil, _ json: [String: any Sendable] = [:]) async throws -> Reply {
        try await call("POST", path, token: token, json: json)
    }

    /// Signs in; returns the token. Changes the password first if the server asks for it.
    public func signIn(email: String, password: String, newPassword: String? = nil) async throws -> String {
        let reply = try await post("/api/v1/auth/sign-in", ["email": email, "password": password])
        guard reply.status == 200, let token = reply.string("token") else { throw HarnessError("sign-in failed: \(reply)") }
        if reply.json["mustChangePassword"] as? Bool == true {
            let changed = try await post(
                "/api/v1/me/password", token: token, ["currentPassword": password, "newPassword": newPassword ?? "a new password \(UUID())"])
            guard changed.status == 204 else { throw HarnessError("password change failed: \(changed)") }
        }
        return token
    }
}
