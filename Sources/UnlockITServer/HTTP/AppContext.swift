import Foundation
import Hummingbird
import NIOCore
import UnlockITCore

/// Who is calling: set by ``AuthMiddleware`` from the bearer token.
public struct Identity: Sendable {
    public let user: User
    public let tokenHash: [UInt8]
}

/// The request context of every UnlockIT route.
public struct AppContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public var identity: Identity?
    /// The connection's peer (a proxy's, behind one: see ``ClientAddress``).
    public let remoteAddress: SocketAddress?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        identity = nil
        remoteAddress = source.channel.remoteAddress
    }

    /// Bodies are small JSON documents; only the user import takes a larger one.
    public var maxUploadSize: Int {
        coreContext.endpointPath.value == "/api/v1/users/import" ? 4 * 1024 * 1024 : 64 * 1024
    }

    public var requestDecoder: JSONDecoder { APIJSON.decoder }
    public var responseEncoder: JSONEncoder { APIJSON.encoder }

    /// The caller: 401 if the route was reached without one (a routing mistake, never a user's),
    /// 403 `user_disabled` if their account is disabled. Only the unlock route lets a disabled user
    /// through, so that the attempt is decided by the access rule and audited with its reason.
    public func requireIdentity(allowingDisabled: Bool = false) throws -> Identity {
        guard let identity else { throw APIError.unauthenticated }
        guard identity.user.enabled || allowingDisabled else { throw APIError.userDisabled }
        return identity
    }
}

/// The API's JSON conventions: ISO 8601 dates, sorted keys.
public enum APIJSON {
    public static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    public static var decoder: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }
}
