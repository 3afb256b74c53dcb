import Foundation

/// An OpenID Connect ID token that has signed someone in, kept until the token would no longer be
/// accepted anyway, so that it signs no one in again: a token copied from a log, a proxy or a shared
/// terminal is worth nothing once it has been used.
public struct SpentIDToken: Sendable, Equatable {
    /// SHA-256 of the token's signed part, its header and payload as sent, not of the whole token:
    /// an ECDSA signature can be rewritten into another that verifies too, the signed part cannot.
    public let digest: [UInt8]
    /// When the verifier stops accepting the token: its expiry plus the verifier's leeway.
    public let keptUntil: Date
    /// Whose account at the issuer the token speaks for (``OIDCIdentity``); nil in tests of the
    /// token's single use alone.
    public let identity: OIDCIdentity?

    public init(digest: [UInt8], keptUntil: Date, identity: OIDCIdentity? = nil) {
        self.digest = digest
        self.keptUntil = keptUntil
        self.identity = identity
    }
}
