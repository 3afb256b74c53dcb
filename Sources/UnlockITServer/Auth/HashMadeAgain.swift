import UnlockITCore

extension AppServices {
    /// The account's password hash if it is no longer `verified` and `password` still opens it: a
    /// sign-in made it again at a new bcrypt cost while this request checked the password. Nil when
    /// it did not change, or when the password no longer opens it (a new password came first).
    /// Sign-in and the password change, which write only over the hash they verified, try again with it.
    func hashMadeAgain(from verified: String, email: String, opensWith password: String) async throws -> String? {
        guard let (_, current) = try await store.credentials(email: email), let current, current != verified,
            try await hasher.verify(password, hash: current)
        else { return nil }
        return current
    }
}
