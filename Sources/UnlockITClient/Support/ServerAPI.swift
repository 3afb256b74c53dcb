import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import UnlockITCore
import UnlockITLocalization

/// The server's API as the CLI uses it: JSON in and out, and every failure turned into a
/// localized ``CLIError`` (never raw JSON, never a stack trace).
struct ServerAPI: Sendable {
    let baseURL: String
    let token: String?
    let l: Localizer

    /// One HTTP client for the run. Like curl, one connection attempt (refused: at once; silent: after
    /// 5 s); how long an answer may take is each call's deadline (2 minutes, more for an import,
    /// which hashes a password per row). The process exits without shutting it down, which is fine
    /// for a client that lives as long as the process.
    static let http: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.timeout = .init(connect: .seconds(5), read: nil)
        configuration.connectionPool.retryConnectionEstablishment = false
        // A redirect would send the request again, body and all (a password, an import), to wherever
        // the answer points; the server never redirects, so none is followed.
        configuration.redirectConfiguration = .disallow
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }()

    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }()

    static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }()

    struct Problem: Decodable {
        var code: String
        var reason: String?
        var detail: String?
        var errors: [ImportRowError]?
    }

    struct ImportRowError: Decodable, Sendable {
        var index: Int
        var field: String
        var reason: String
    }

    /// The problem of a failed call, for commands that handle some codes themselves.
    struct Failure: Error {
        let status: Int
        let problem: Problem?
    }

    func get<T: Decodable>(_ path: String, as type: T.Type = T.self) async throws -> T {
        try decode(try await call("GET", path, body: nil))
    }

    func send<T: Decodable>(_ method: String, _ path: String, _ body: some Encodable, as type: T.Type = T.self) async throws -> T {
        try decode(try await call(method, path, body: try Self.encoder.encode(body)), change: method != "GET")
    }

    func send<T: Decodable>(_ method: String, _ path: String, as type: T.Type = T.self) async throws -> T {
        try decode(try await call(method, path, body: nil), change: method != "GET")
    }

    /// A call whose success has no body (204).
    func perform(_ method: String, _ path: String, _ body: (some Encodable)? = Optional<String>.none) async throws {
        _ = try await call(method, path, body: try body.map { try Self.encoder.encode($0) })
    }

    /// The answer to a request that succeeded; for a `change`, one that cannot be read is marked
    /// ``CLIError/answerUnreadable``: the change was made.
    private func decode<T: Decodable>(_ data: Data, change: Bool = false) throws -> T {
        do {
            return try Self.decoder.decode(T.self, from: data)
        } catch {
            var failure = CLIError(l("error.bad_response"), hint: l("hint.bad_response"), status: .failure)
            failure.answerUnreadable = change
            throw failure
        }
    }

    /// Sends the request. Problems become ``CLIError``s, except that with `raw` the caller gets a
    /// ``Failure`` to inspect.
    func call(_ method: String, _ path: String, body: Data?, raw: Bool = false, timeout: Duration = .seconds(120)) async throws -> Data {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = HTTPMethod(rawValue: method)
        request.headers.add(name: "Accept", value: "application/json")
        request.headers.add(name: "User-Agent", value: "unlockit-cli")
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        // A change that may have reached the server is not said to have gone nowhere: it may have been made.
        let changes = method != "GET" && method != "HEAD"
        let response: HTTPClientResponse
        let data: Data
        do {
            response = try await Self.http.execute(request, timeout: .init(timeout))
        } catch {
            throw changes && Self.mayHaveArrived(error) ? noAnswer() : unreachable()
        }
        do {
            data = Data(try await response.body.collect(upTo: 32 * 1024 * 1024).readableBytesView)
        } catch {
            // The answer had begun: the server took the request.
            throw changes ? noAnswer() : unreachable()
        }
        guard (200..<300).contains(response.status.code) else {
            let problem = try? Self.decoder.decode(Problem.self, from: data)
            if raw { throw Failure(status: Int(response.status.code), problem: problem) }
            guard let problem else {
                // A proxy's 502 or 504 to a change: the server may have taken it and its answer is lost.
                if changes, [502, 504].contains(response.status.code) { throw noAnswer() }
                // Not the server's own answer (a proxy's, most likely): its status still says which kind of failure.
                throw CLIError(
                    l("error.http_status", Int(response.status.code)), hint: l("hint.bad_response"), status: Self.exitStatus(response.status.code))
            }
            throw CLIError.problem(problem.code, reason: problem.reason, detail: problem.detail, l)
        }
        return data
    }

    private func unreachable() -> CLIError {
        CLIError(l("error.server_unreachable", baseURL), hint: l("hint.server_unreachable"), status: .serverUnreachable)
    }

    private func noAnswer() -> CLIError {
        var error = CLIError(l("error.no_answer", baseURL), hint: l("hint.no_answer"), status: .serverUnreachable)
        error.answerLost = true
        return error
    }

    /// Whether a request that failed this way may have been sent: the connection closed or was
    /// reset, or the deadline passed, after it was made. A failure to connect at all (refused, no
    /// route, a name not found, a TLS handshake) or one not known here is taken as never sent.
    static func mayHaveArrived(_ error: any Error) -> Bool {
        if let error = error as? HTTPClientError {
            return [.remoteConnectionClosed, .deadlineExceeded, .readTimeout, .writeTimeout].contains(error)
        }
        if let error = error as? IOError { return [ECONNRESET, EPIPE].contains(error.errnoCode) }
        return false
    }
}

extension ServerAPI {
    /// The exit status for an error answer without a problem document.
    static func exitStatus(_ code: UInt) -> ExitStatus {
        switch code {
        case 401: .notSignedIn
        case 403: .forbidden
        case 502, 503, 504: .serverUnreachable
        default: .failure
        }
    }
}

extension String {
    /// Percent-encodes a value for a URL query.
    var queryEncoded: String {
        addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? self
    }
}
