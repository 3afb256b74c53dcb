import AsyncHTTPClient
import Crypto
import Foundation
import JWTKit
import Logging
import NIOCore
import NIOHTTP1
import Synchronization
import UnlockITCore

/// Verifies OpenID Connect ID tokens against the configured issuers.
///
/// A token is accepted only if: its header names an allowed asymmetric algorithm; its `iss` is a
/// configured issuer; its signature verifies with that issuer's JWKS; its `aud` contains the client id
/// the caller named, and that client id is configured for the issuer; it has not expired (with 60 s
/// of leeway) and was not issued in the future; and it carries an email the issuer says is verified.
/// That a token signs someone in once only, and only the user linked to its account at the issuer
/// (``OIDCIdentity``), is the store's to keep (``VerifiedIdentity/token``).
public final class OIDCVerifier: Sendable {
    public struct VerifiedIdentity: Sendable, Equatable {
        public let issuer: String
        public let subject: String
        public let email: String
        /// The companies whose users the issuer may sign in; nil for any.
        public let companies: Set<CompanyID>?
        /// The token as it is to be recorded when it signs someone in.
        public let token: SpentIDToken

        public func maySignIn(_ user: User) -> Bool { companies?.contains(user.companyID) ?? true }
    }

    public enum Failure: Error, Equatable {
        case malformed
        case unknownIssuer
        case algorithmNotAllowed
        case badSignature
        case wrongAudience
        case expired
        case emailNotVerified
        case keysUnavailable

        /// As the 511 answer's `reason` says it; nil for keys that could not be loaded, which is not
        /// the token's fault (503).
        public var rejection: IDTokenRejection? {
            switch self {
            case .malformed: .malformed
            case .unknownIssuer: .unknownIssuer
            case .algorithmNotAllowed: .algorithmNotAllowed
            case .badSignature: .badSignature
            case .wrongAudience: .wrongAudience
            case .expired: .expired
            case .emailNotVerified: .emailNotVerified
            case .keysUnavailable: nil
            }
        }
    }

    struct Claims: JWTPayload {
        var iss: IssuerClaim
        var sub: SubjectClaim
        var aud: AudienceClaim
        var exp: ExpirationClaim
        var iat: IssuedAtClaim?
        var nbf: NotBeforeClaim?
        /// The party the token was issued to (OpenID Connect Core 1.0, 2): when present it must be the client.
        var azp: String?
        var email: String?
        var email_verified: BoolClaim?

        /// Claims are checked by ``OIDCVerifier`` with the server's clock once the signature holds.
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    private struct Header: Decodable {
        var alg: String
        var kid: String?
    }

    /// An issuer's keys as loaded: jwt-kit's collection, and each key's algorithm (``SigningKeys``).
    private struct LoadedKeys: Sendable {
        let collection: JWTKeyCollection
        let signing: SigningKeys

        func accept(_ header: Header) -> Bool { signing.accept(alg: header.alg, kid: header.kid) }
    }

    private final class Issuer: Sendable {
        let configuration: ServerConfiguration.OIDCIssuer
        let keys = Mutex<(loaded: LoadedKeys, fetchedAt: Date)?>(nil)
        /// The fetch under way, which every sign-in that needs the keys meanwhile waits for, and when
        /// the last one started, successful or not (see ``refetchInterval``).
        let fetching = Mutex<(running: Task<LoadedKeys?, Never>?, generation: Int, startedAt: Date?)>((nil, 0, nil))

        init(configuration: ServerConfiguration.OIDCIssuer) { self.configuration = configuration }
    }

    private static let defaultAlgorithms = ServerConfiguration.oidcAlgorithms
    private let issuers: [String: Issuer]
    private let clock: ServerClock
    private let logger: Logger

    public init(issuers: [ServerConfiguration.OIDCIssuer], clock: ServerClock, logger: Logger) {
        var table: [String: Issuer] = [:]
        for issuer in issuers { table[issuer.issuer] = Issuer(configuration: issuer) }
        self.issuers = table
        self.clock = clock
        self.logger = logger
    }

    public var isConfigured: Bool { !issuers.isEmpty }

    /// Whether some configured issuer may sign in users of `company`: without one, a user who signs in
    /// with OpenID Connect only could never sign in.
    public func signsIn(_ company: CompanyID) -> Bool {
        issuers.values.contains { issuer in issuer.configuration.signedInCompanies?.contains(company) ?? true }
    }

    public func verify(idToken: String, clientID: String) async throws(Failure) -> VerifiedIdentity {
        let parts = idToken.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, idToken.utf8.count <= 16 * 1024,
            let headerData = Self.base64URLDecode(parts[0]),
            let header = try? JSONDecoder().decode(Header.self, from: headerData)
        else { throw .malformed }

        // The issuer is read unverified only to choose whose keys to verify with; it is checked again below.
        let unverified: Claims
        do {
            unverified = try DefaultJWTParser().parse([UInt8](idToken.utf8), as: Claims.self).payload
        } catch {
            throw .malformed
        }
        guard let issuer = issuers[unverified.iss.value] else { throw .unknownIssuer }
        let allowed = issuer.configuration.algorithms ?? Self.defaultAlgorithms
        guard allowed.contains(header.alg), !header.alg.hasPrefix("HS"), header.alg.lowercased() != "none" else {
            throw .algorithmNotAllowed
        }

        // The key's algorithm must be the header's: a token never chooses how a key is used.
        let claims: Claims
        let loaded = try await keys(for: issuer)
        if loaded.accept(header), let verified = try? await loaded.collection.verify(idToken, as: Claims.self) {
            claims = verified
        } else {
            // Perhaps signed with a key the issuer has published since (a rotation): its keys again,
            // at most once per ``refetchInterval``, so a stream of bad tokens cannot make a stream of fetches.
            let again = try await keys(for: issuer, again: true)
            guard again.accept(header) else { throw .badSignature }
            do {
                claims = try await again.collection.verify(idToken, as: Claims.self)
            } catch {
                throw .badSignature
            }
        }

        guard claims.iss.value == issuer.configuration.issuer else { throw .unknownIssuer }
        guard issuer.configuration.clientIDs.contains(clientID), claims.aud.value.contains(clientID) else { throw .wrongAudience }
        // A token for several audiences was issued to one of them, which `azp` names: one issued to
        // another application that also lists this client is that application's, not this sign-in's.
        if let azp = claims.azp {
            guard azp == clientID else { throw .wrongAudience }
        } else if claims.aud.value.count > 1 {
            throw .wrongAudience
        }
        let now = clock.now()
        let leeway: TimeInterval = 60
        guard claims.exp.value.addingTimeInterval(leeway) > now else { throw .expired }
        if let nbf = claims.nbf, nbf.value.addingTimeInterval(-leeway) > now { throw .expired }
        if let iat = claims.iat, iat.value.addingTimeInterval(-leeway) > now { throw .expired }
        guard let email = claims.email, claims.email_verified?.value == true else { throw .emailNotVerified }
        // The signed part, header and payload, is the token's identity; `parts` holds what was verified.
        let signed = idToken.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count)
        return VerifiedIdentity(
            issuer: claims.iss.value, subject: claims.sub.value, email: email,
            companies: issuer.configuration.signedInCompanies,
            token: SpentIDToken(
                digest: Array(SHA256.hash(data: Array(signed))), keptUntil: claims.exp.value.addingTimeInterval(leeway),
                identity: OIDCIdentity(issuer: claims.iss.value, subject: claims.sub.value)))
    }

    /// How long after a fetch of an issuer's keys, successful or not, no other is started: one that
    /// failed (a provider down, a 10 s timeout) is not tried again by every sign-in that follows.
    static let refetchInterval: TimeInterval = 30

    /// How long after their last successful fetch an issuer's keys stay in use while fetches fail. An
    /// issuer that withdrew a key (one that leaked) is believed within this long, even when its keys
    /// cannot be fetched meanwhile; past it, its sign-ins wait for a fetch that works.
    static let staleKeysLimit: TimeInterval = 24 * 3600

    /// The issuer's keys, loaded from its JWKS file or URL and refreshed hourly, or `again` now (a
    /// token no known key verifies). Sign-ins that need them while a fetch is under way wait for that
    /// one; none starts within ``refetchInterval`` of the last, and while fetches fail the keys
    /// already loaded stay in use, for up to ``staleKeysLimit`` after they were fetched.
    private func keys(for issuer: Issuer, again: Bool = false) async throws(Failure) -> LoadedKeys {
        let now = clock.now()
        let cached = issuer.keys.withLock { $0 }
        if let cached, !again, now.timeIntervalSince(cached.fetchedAt) < 3600 { return cached.loaded }
        let fetch = issuer.fetching.withLock { state -> Task<LoadedKeys?, Never>? in
            if let running = state.running { return running }
            if let last = state.startedAt, now.timeIntervalSince(last) < Self.refetchInterval { return nil }
            state.generation += 1
            let generation = state.generation
            // Made under the lock, so it is recorded as running before it can finish and say so.
            let task = Task { [self] () -> LoadedKeys? in
                let collection = await self.fetchKeys(issuer, at: now)
                issuer.fetching.withLock { if $0.generation == generation { $0.running = nil } }
                return collection
            }
            state = (task, generation, now)
            return task
        }
        if let fetch, let loaded = await fetch.value { return loaded }
        // No fetch now, or it failed: the keys already loaded, if any, unless they are too old to trust.
        if let cached = issuer.keys.withLock({ $0 }), now.timeIntervalSince(cached.fetchedAt) < Self.staleKeysLimit { return cached.loaded }
        throw .keysUnavailable
    }

    private func fetchKeys(_ issuer: Issuer, at now: Date) async -> LoadedKeys? {
        do {
            let json: String
            if let file = issuer.configuration.jwksFile {
                json = try String(contentsOfFile: file, encoding: .utf8)
            } else if let url = issuer.configuration.jwksURL {
                var request = HTTPClientRequest(url: url)
                request.method = .GET
                let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
                guard response.status == .ok else { throw Failure.keysUnavailable }
                json = String(buffer: try await response.body.collect(upTo: 1024 * 1024))
            } else {
                throw Failure.keysUnavailable
            }
            let signing = try SigningKeys.prepare(json, allowed: issuer.configuration.algorithms ?? Self.defaultAlgorithms)
            if !signing.skipped.isEmpty {
                logger.warning(
                    "some of the issuer's keys are not used", metadata: ["issuer": "\(issuer.configuration.issuer)", "skipped": "\(signing.skipped)"])
            }
            let collection = JWTKeyCollection()
            try await collection.add(jwksJSON: signing.jwks)
            let loaded = LoadedKeys(collection: collection, signing: signing)
            issuer.keys.withLock { $0 = (loaded, now) }
            return loaded
        } catch {
            logger.error(
                "could not load the issuer's keys", metadata: ["issuer": "\(issuer.configuration.issuer)", "error": "\(error)"])
            return nil
        }
    }

    static func base64URLDecode(_ text: Substring) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.utf8.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }
}
