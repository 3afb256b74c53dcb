import Hummingbird

extension AppServices {
    /// Counts a password check (a sign-in, or the current password of a password change) against its
    /// client's rate (``RateLimiter``), before any work: 429 `too_many_requests` when over it.
    /// Both share one budget per client, since both are guesses that cost a bcrypt pass. Returns the
    /// client's key, which the per-account limits use too (``SignInLimiter``).
    @discardableResult
    func admitPasswordClient(_ request: Request, _ context: AppContext) throws -> String {
        let client = client(of: request, context)
        guard let refusal = clientLimiter.take(client, now: .now) else { return client }
        metrics.signIn(outcome: "client_limited")
        throw APIError.tooManySignIns(retryAfter: refusal.wait)
    }

    /// The client `request` comes from (``ClientAddress``).
    func client(of request: Request, _ context: AppContext) -> String {
        ClientAddress.key(peer: context.remoteAddress, forwardedFor: request.headers[ClientAddress.forwardedFor], trustedProxies: trustedProxies)
    }
}
