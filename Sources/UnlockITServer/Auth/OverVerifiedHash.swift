import UnlockITCore

extension AppServices {
    /// Runs `write`, which stores something only over the password hash `verified` (a session, a new
    /// password), and returns its result with the hash it was written over. If the hash changed while
    /// the request checked `password` against it, another sign-in may only have made it again at a new
    /// bcrypt cost: when `password` still opens the account's current hash, `write` runs once more over
    /// that one. Otherwise (a new password came first) ``StoreError/credentialsChanged`` is thrown.
    func overVerifiedHash<T>(
        _ verified: String, email: String, password: String, client: String, _ write: (_ over: String) async throws -> T
    ) async throws -> (result: T, over: String) {
        do {
            return (try await write(verified), verified)
        } catch StoreError.credentialsChanged {
            guard let (_, current) = try await store.credentials(email: email), let current, current != verified,
                try await hasher.verify(password, hash: current, client: client)
            else { throw StoreError.credentialsChanged }
            return (try await write(current), current)
        }
    }
}
