import UnlockITCore

extension AppServices {
    /// What a write that follows slow work (bcrypt, a broker command, a wait for a lock) checks again
    /// as it commits: that this admin still is one, with the same session.
    func adminCheck(_ identity: Identity) -> AdminCheck {
        AdminCheck(session: identity.tokenHash, company: identity.user.companyID, at: clock.now())
    }
}
