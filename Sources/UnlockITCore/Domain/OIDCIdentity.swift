/// A person's account at an OpenID Connect issuer: the issuer and the `sub` it gives them. Only the
/// pair identifies someone for good (OpenID Connect Core 1.0, 5.7): an email address can pass to
/// another person at the issuer, a `sub` is never given to anyone else. A user is linked to the
/// account they first sign in with at each issuer, and only that account signs them in there after.
public struct OIDCIdentity: Sendable, Hashable {
    public let issuer: String
    public let subject: String

    public init(issuer: String, subject: String) {
        self.issuer = issuer
        self.subject = subject
    }
}
