/// Why an OpenID Connect ID token was refused: the `reason` of a 511 `id_token_invalid` answer.
/// The server gives it; the CLI says what to do about each.
public enum IDTokenRejection: String, Sendable, CaseIterable {
    case malformed
    case unknownIssuer = "unknown_issuer"
    case algorithmNotAllowed = "algorithm_not_allowed"
    case badSignature = "bad_signature"
    case wrongAudience = "wrong_audience"
    case expired
    case emailNotVerified = "email_not_verified"
    /// The token has signed someone in before.
    case reused
    /// The token is of another account at its issuer than the one the user is linked to there, or of
    /// one linked to another user (``OIDCIdentity``).
    case identityMismatch = "identity_mismatch"
}
