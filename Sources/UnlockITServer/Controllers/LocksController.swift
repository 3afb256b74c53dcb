import Foundation
import Hummingbird
import LockProtocol
import Logging
import UnlockITCore

/// Admin: register, activate, list, show, rename or move, and retire the company's locks.
struct LocksController {
    let services: AppServices

    struct Register: RequestBody {
        var id: String
        var name: String
        var roomId: String
        /// The label's setup code: required for a factory device id, which is checked against it.
        var setupCode: String?
        static let fields: Set<String> = ["id", "name", "roomId", "setupCode"]
    }

    /// A new name, another room of the company, or both.
    struct Update: RequestBody {
        var name: String?
        var roomId: String?
        static let fields: Set<String> = ["name", "roomId"]
    }

    struct Activate: RequestBody {
        var setupCode: String
        static let fields: Set<String> = ["setupCode"]
    }

    /// The lock's broker account. The password is shown once, here, and never again.
    struct BrokerCredentials: Codable, Sendable {
        var broker: String
        var username: String
        var password: String
    }

    /// A lock with its broker credentials: the answer to a registration and to a password reset.
    struct Registered: ResponseCodable {
        var lock: LockResponse
        var mqtt: BrokerCredentials
    }

    func addRoutes(to group: RouterGroup<AppContext>) {
        group.get("locks", use: list)
        group.post("locks", use: register)
        group.get("locks/:id", use: show)
        group.patch("locks/:id", use: update)
        group.post("locks/:id/activate", use: activate)
        group.post("locks/:id/retire", use: retire)
        group.post("locks/:id/broker-password", use: resetBrokerPassword)
    }

    static func lockID(_ context: AppContext) throws -> LockID {
        guard let text = context.parameters.get("id"), let id = LockID(text) else { throw APIError.invalidID("the lock id") }
        return id
    }

    private func response(_ lock: Lock) -> LockResponse {
        LockResponse(lock, presence: lock.state == .retired ? nil : services.gateway.presence(of: lock.id))
    }

    @Sendable func list(request: Request, context: AppContext) async throws -> ListResponse<LockResponse> {
        let admin = try context.requireIdentity().user
        var locks = try await services.store.locks(in: admin.companyID)
        if let room = try request.queryParameters(known: ["room"])["room"] {
            guard let roomID = RoomID(room) else { throw APIError.invalidID("room") }
            locks = locks.filter { $0.roomID == roomID }
        }
        return ListResponse(items: locks.map(response))
    }

    @Sendable func show(request: Request, context: AppContext) async throws -> LockResponse {
        let admin = try context.requireIdentity().user
        guard let lock = try await services.store.lock(try Self.lockID(context), in: admin.companyID) else { throw APIError.notFound(.lockNotFound) }
        return response(lock)
    }

    @Sendable func register(request: Request, context: AppContext) async throws -> EditedResponse<Registered> {
        let identity = try context.requireIdentity()
        let admin = identity.user
        let body = try await request.decodeStrict(Register.self, context: context)
        guard let id = LockID(body.id) else {
            throw APIError.invalidField("id", "a device id is 3–64 lowercase letters, digits and hyphens")
        }
        guard let name = Validation.name(body.name) else { throw APIError.invalidField("name", "1–100 characters") }
        guard let roomID = RoomID(body.roomId) else { throw APIError.invalidID("roomId") }
        let setupCode = try body.setupCode.map(Self.setupCode)
        guard try await services.store.room(roomID, in: admin.companyID) != nil else { throw APIError.notFound(.roomNotFound) }
        try await requireProof(of: id, setupCode, room: roomID, by: admin)

        // Another company's device id (or one of this company's in use) answers at once, not after
        // waiting behind a change of that lock. Checked again in the turn.
        try await requireFree(id, for: admin)
        return try await inTurn(id, as: identity) { try await register(id, name: name, room: roomID, by: identity) }
    }

    /// A factory device id (``LockID/hasFactoryForm``) is registered only with the setup code it was
    /// derived from: whoever read the id on a lock cannot take it. A wrong code is audited and counts
    /// against the company's budget (``takeSetupCodeGuess(by:)``). Any other id can be checked
    /// against nothing; a code given with it was checked for its form only. No read of the lock's
    /// holder: whoever lacks the code learns nothing of it.
    private func requireProof(of id: LockID, _ setupCode: SetupCode?, room: RoomID, by admin: User) async throws {
        guard id.hasFactoryForm else { return }
        guard let setupCode else {
            throw APIError(
                .badRequest, code: .setupCodeRequired, title: "A factory device id needs its setup code",
                detail: "Give the setup code on the lock's label with the device id.")
        }
        let guess = try takeSetupCodeGuess(by: admin)
        guard FactoryID.matches(id, setupCode) else {
            try await wrongSetupCode(.registerLock, by: admin, lock: id, room: room)
            throw Self.problem(for: .setupCodeMismatch)
        }
        services.wrongSetupCodeLimiter.giveBack(guess, for: admin.companyID)
    }

    static func setupCode(_ text: String) throws -> SetupCode {
        guard let code = SetupCode(text) else {
            throw APIError.invalidField("setupCode", "a setup code is 16 characters such as 7KQ2-M9XD-4RTA-WZ3C")
        }
        return code
    }

    /// 429 `too_many_wrong_setup_codes` while the company's admins have given too many wrong setup
    /// codes in the last day: no code of theirs is checked then, right or wrong.
    private func requireSetupCodeChecks(for admin: User) throws {
        try services.wrongSetupCodeLimiter.requireOpen(for: admin.companyID, now: services.clock.now(), refusal: APIError.tooManyWrongSetupCodes)
    }

    /// Takes one wrong setup code from the company's budget (``CompanyDailyBudget``) before a code
    /// is checked, or throws 429 `too_many_wrong_setup_codes`: of many requests at once, only as
    /// many as the budget has left learn whether their code is right. Given back when it is right
    /// (or the check never came).
    private func takeSetupCodeGuess(by admin: User) throws -> Date {
        try services.wrongSetupCodeLimiter.take(for: admin.companyID, now: services.clock.now(), refusal: APIError.tooManyWrongSetupCodes)
    }

    /// A wrong setup code, its share of the budget taken: audited, denied, with `action`; the request
    /// that spends the budget tells the operator of the pause.
    private func wrongSetupCode(_ action: AuditAction, by admin: User, lock: LockID, room: RoomID?) async throws {
        services.wrongSetupCodeLimiter.warnIfSpent(
            by: admin, now: services.clock.now(), logger: services.logger,
            warning: "a company's admins gave too many wrong setup codes; their registrations of factory ids and activations are paused")
        try await services.store.append(
            services.audit(action, by: admin, company: admin.companyID, outcome: .denied, reason: .setupCodeMismatch, lock: lock, room: room))
    }

    /// ``StoreError/lockIDTaken`` when a lock has the device id, within the company's budget for ids
    /// of other companies (``CompanyDailyBudget``): over it, every registration of the company is
    /// answered 429 whatever the id, and tells nothing of it.
    private func requireFree(_ id: LockID, for admin: User) async throws {
        let lapsedBefore = services.lockIDsLapsedBefore()
        let holder = try await services.store.lockIDHolder(id, for: admin.companyID, lapsedBefore: lapsedBefore)
        // Counted after the lookup, free or not: one step decides (``CompanyDailyBudget``).
        try countTakenElsewhere(by: admin, holder == .otherCompany ? 1 : 0)
        if holder != nil { throw StoreError.lockIDTaken }
    }

    /// Counts `found` device ids in use outside the admin's company against its budget; throws 429
    /// once they do not fit, or, finding none, once the budget is spent.
    private func countTakenElsewhere(by admin: User, _ found: Int = 1) throws {
        try services.takenLockIDLimiter.count(
            found, by: admin, now: services.clock.now(), logger: services.logger,
            warning: "a company's admins ran into too many lock ids of other companies; their lock registrations are paused",
            refusal: APIError.tooManyTakenLockIDs)
    }

    /// Another company's lock whose hold on the id has lapsed goes first (``Store/releaseLapsedLock(_:for:lapsedBefore:at:checking:)``),
    /// then the broker account is made, then the lock and its audit event are written in one
    /// transaction: no lock without its event, and none whose broker password exists nowhere.
    private func register(_ id: LockID, name: String, room roomID: RoomID, by identity: Identity) async throws -> EditedResponse<Registered> {
        let admin = identity.user
        // Checked before the broker is asked: an account of this name may be another lock's, and
        // making it anew would take that lock's password away. (The turn keeps it free meanwhile.) A
        // lock this company retired has no account any more: its id may be registered again.
        try await requireFree(id, for: admin)
        if try await services.store.releaseLapsedLock(
            id, for: admin.companyID, lapsedBefore: services.lockIDsLapsedBefore(), at: services.clock.now(),
            checking: services.adminCheck(identity))
        {
            // Its account is replaced below, which disconnects its device without its will.
            services.logger.notice("a lock's hold on its device id lapsed; another company registers it", metadata: ["lock": "\(id)"])
            services.gateway.retired(id)
        }
        let password = BrokerAccounts.randomPassword()
        do {
            try await services.accounts.createLockAccount(id, password: password)
        } catch BrokerAccounts.AccountError.nameTaken {
            // The same answer as for a device id another lock has: the name is not this lock's to
            // take. It tells of an account outside the company (the server's own, an operator's),
            // so it counts as another company's id would.
            try countTakenElsewhere(by: admin)
            throw StoreError.lockIDTaken
        } catch {
            try await brokerFailed(.registerLock, by: admin, lock: id, room: roomID, error: error, "could not create the lock's broker account")
            throw APIError(.serviceUnavailable, code: .brokerUnavailable, title: "The broker could not create the lock's account")
        }
        // Nothing known of a device that had the id before holds (the broker's answer came after its
        // last message), and the lock is dated from now: a presence of that device written late
        // cannot be taken for this lock's (``Store/recordPresence(_:)``).
        services.gateway.registered(id)
        let lock = Lock(id: id, companyID: admin.companyID, roomID: roomID, name: name, state: .registered, createdAt: services.clock.now())
        do {
            try await services.store.createLock(
                lock, checking: services.adminCheck(identity),
                audit: services.audit(.registerLock, by: admin, company: admin.companyID, lock: id, room: roomID))
        } catch {
            // Its password exists only in this answer, which will not be given: the account goes again,
            // so that trying again works. (The next registration of this id replaces an account left.)
            services.logger.error("could not record the lock's registration; undoing it", metadata: ["lock": "\(id)", "error": "\(error)"])
            do {
                try await services.accounts.deleteLockAccount(id)
            } catch let undo {
                services.logger.error("could not delete the lock's broker account", metadata: ["lock": "\(id)", "error": "\(undo)"])
            }
            // The room was deleted since ``register(request:context:)`` found it (the turn may have waited).
            if case StoreError.notFound = error { throw APIError.notFound(.roomNotFound) }
            throw error
        }
        return EditedResponse(
            status: .created,
            response: Registered(
                lock: response(lock), mqtt: BrokerCredentials(broker: services.brokerURL, username: id.rawValue, password: password)))
    }

    /// Renames the lock or moves it to another room: who may open it follows the room's rule from
    /// then on. Its broker account and key are untouched.
    @Sendable func update(request: Request, context: AppContext) async throws -> LockResponse {
        let identity = try context.requireIdentity()
        let admin = identity.user
        let id = try Self.lockID(context)
        let body = try await request.decodeStrict(Update.self, context: context)
        let name = try body.name.map { name in
            guard let valid = Validation.name(name) else { throw APIError.invalidField("name", "1–100 characters") }
            return valid
        }
        let room = try body.roomId.map { text in
            guard let room = RoomID(text) else { throw APIError.invalidID("roomId") }
            return room
        }
        do {
            let lock = try await services.store.updateLock(
                id, in: admin.companyID, name: name, room: room, checking: services.adminCheck(identity),
                audit: services.audit(.updateLock, by: admin, company: admin.companyID, lock: id, room: nil))
            return response(lock)
        } catch StoreError.notFound {
            throw APIError.notFound(.lockNotFound)
        }
    }

    @Sendable func activate(request: Request, context: AppContext) async throws -> LockResponse {
        let identity = try context.requireIdentity()
        let admin = identity.user
        let id = try Self.lockID(context)
        let body = try await request.decodeStrict(Activate.self, context: context)
        // The body's own check first: it needs no read of the database.
        let setupCode = try Self.setupCode(body.setupCode)
        try await requireOwnLock(id, of: admin)
        try requireSetupCodeChecks(for: admin)
        // In the lock's turn: a registration by another company, once this one has lapsed, must not
        // replace the broker account of a lock that is being activated meanwhile (nor have its own
        // undone, and the account with it, when the activation commits first).
        return try await inTurn(id, as: identity) { try await activate(id, setupCode: setupCode, by: identity) }
    }

    private func activate(_ id: LockID, setupCode: SetupCode, by identity: Identity) async throws -> LockResponse {
        let admin = identity.user
        let lock = try await unretiredLock(id, of: admin)
        // Taken in the turn, before the server's check or the lock's (either tells a wrong code from
        // the right one), and given back unless the code was wrong.
        let guess = try takeSetupCodeGuess(by: admin)
        var wrongCode = false
        defer { if !wrongCode { services.wrongSetupCodeLimiter.giveBack(guess, for: admin.companyID) } }
        func fail(_ failure: ActivationFailure) async throws -> Never {
            if failure == .setupCodeMismatch {
                wrongCode = true
                try await wrongSetupCode(.activateLock, by: admin, lock: id, room: lock.roomID)
                throw Self.problem(for: failure)
            }
            let outcome: AuditOutcome = [.lockOffline, .lockTimeout, .brokerUnavailable].contains(failure) ? .error : .denied
            try await services.store.append(
                services.audit(
                    .activateLock, by: admin, company: admin.companyID, outcome: outcome, reason: failure.auditReason, lock: id,
                    room: lock.roomID))
            throw Self.problem(for: failure)
        }
        // A factory device id names its setup code: a code of another lock is refused here, as the
        // lock would refuse it, without asking the lock (which may be a stand-in made with that code).
        if id.hasFactoryForm, !FactoryID.matches(id, setupCode) { try await fail(.setupCodeMismatch) }
        let key: Key128
        do {
            key = try await services.gateway.activate(id, setupCode: setupCode, pending: { try await pendingPairing(id, in: admin.companyID) }) {
                [services] pairing in
                try await services.store.holdPendingKey(
                    id, in: admin.companyID, sealedKey: try services.sealer.seal(pairing.key, for: id), wrappedKey: pairing.wrappedKey.bytes)
            }
        } catch let failure as ActivationFailure {
            try await fail(failure)
        }
        let now = services.clock.now()
        do {
            try await services.store.activateLock(
                id, in: admin.companyID, sealedKey: try services.sealer.seal(key, for: id), at: now,
                // The pairing took seconds: an admin demoted or signed out meanwhile does not finish it
                // (the lock keeps the key as pending, and the next activation resumes it).
                checking: services.adminCheck(identity),
                audit: services.audit(.activateLock, by: admin, company: admin.companyID, lock: id, room: lock.roomID))
        } catch let ended as StoreError where ended == .sessionEnded || ended == .adminRequired {
            // The lock took a key all the same: the company's log says who paired it, and why the
            // lock is not active.
            try await services.store.append(
                services.audit(
                    .activateLock, by: admin, company: admin.companyID, outcome: .denied, reason: .adminSessionEnded, lock: id,
                    room: lock.roomID))
            throw ended
        }
        guard let activated = try await services.store.lock(id, in: admin.companyID) else { throw APIError.notFound(.lockNotFound) }
        return response(activated)
    }

    /// The key an earlier pairing attempt held for the lock, if any.
    private func pendingPairing(_ id: LockID, in company: CompanyID) async throws -> PendingPairing? {
        guard let held = try await services.store.pendingKey(id, in: company) else { return nil }
        guard let wrapped = Block128(held.wrappedKey), let key = try? services.sealer.open(held.sealedKey, for: id) else {
            services.logger.error("a pending pairing key cannot be opened; ignored", metadata: ["lock": "\(id)"])
            return nil
        }
        return PendingPairing(key: key, wrappedKey: wrapped)
    }

    @Sendable func retire(request: Request, context: AppContext) async throws -> LockResponse {
        let identity = try context.requireIdentity()
        let id = try Self.lockID(context)
        try await requireOwnLock(id, of: identity.user)
        return try await inTurn(id, as: identity) { try await retire(id, by: identity.user) }
    }

    private func retire(_ id: LockID, by admin: User) async throws -> LockResponse {
        let lock = try await unretiredLock(id, of: admin, retired: "The lock is already retired")
        // The broker account goes first: a retired lock must not be able to connect any more.
        do {
            try await services.accounts.deleteLockAccount(id)
        } catch {
            try await brokerFailed(.retireLock, by: admin, lock: id, room: lock.roomID, error: error, "could not delete the lock's broker account")
            throw APIError(.serviceUnavailable, code: .brokerUnavailable, title: "The broker could not remove the lock's account")
        }
        services.gateway.retired(id)
        // Not checked again (``inTurn`` checked the admin before the broker was touched): the account
        // is gone and cannot be given back, and the row must say so.
        try await services.store.retireLock(
            id, in: admin.companyID, at: services.clock.now(),
            audit: services.audit(.retireLock, by: admin, company: admin.companyID, lock: id, room: lock.roomID))
        guard let retired = try await services.store.lock(id, in: admin.companyID) else { throw APIError.notFound(.lockNotFound) }
        return response(retired)
    }

    /// A new broker password for a registered or active lock, shown once in the answer: the way back
    /// when a registration's answer was lost (the device id is taken and no one has its password) or a
    /// lock's password leaked. The broker disconnects the lock at once; it connects again once it has
    /// the new password. The lock's key is untouched, so an active lock needs no new activation.
    @Sendable func resetBrokerPassword(request: Request, context: AppContext) async throws -> Registered {
        let identity = try context.requireIdentity()
        let id = try Self.lockID(context)
        try await requireOwnLock(id, of: identity.user)
        return try await inTurn(id, as: identity) { try await resetBrokerPassword(id, as: identity) }
    }

    private func resetBrokerPassword(_ id: LockID, as identity: Identity) async throws -> Registered {
        let admin = identity.user
        let lock = try await unretiredLock(id, of: admin)
        // Its event is queued once the broker has the password (below), so the queue must have room
        // before the broker is touched: a change made must not wait on a log that is behind.
        guard services.store.auditHasRoom else { throw APIError.auditBehind }
        let password = BrokerAccounts.randomPassword()
        do {
            try await services.accounts.resetLockPassword(id, password: password)
        } catch BrokerAccounts.AccountError.nameTaken {
            // Not the broker failing: someone made an account of the lock's name that is not a lock's.
            services.logger.error("the broker has an account of the lock's name that is not a lock's", metadata: ["lock": "\(id)"])
            throw StoreError.lockIDTaken
        } catch {
            try await brokerFailed(
                .resetLockPassword, by: admin, lock: id, room: lock.roomID, error: error, "could not reset the lock's broker password")
            throw APIError(.serviceUnavailable, code: .brokerUnavailable, title: "The broker could not change the lock's password")
        }
        services.gateway.passwordRenewed(id)
        // Queued, not awaited: the broker holds the new password already, and a failed write here
        // would withhold it and leave the lock offline. The queue retries until the event is committed.
        services.store.enqueue(services.audit(.resetLockPassword, by: admin, company: admin.companyID, lock: id, room: lock.roomID))
        // The broker took seconds, perhaps: an admin demoted, disabled or signed out meanwhile is not
        // shown the password. The lock then has one nobody holds, until an admin asks for another.
        do {
            try await services.store.verifyAdmin(services.adminCheck(identity))
        } catch {
            services.logger.notice(
                "a lock's new broker password was not shown: its admin's session ended while the broker set it", metadata: ["lock": "\(id)"])
            throw error
        }
        return Registered(lock: response(lock), mqtt: BrokerCredentials(broker: services.brokerURL, username: id.rawValue, password: password))
    }

    /// 404 `lock_not_found` at once, before the lock's turn, for an id that is not the company's: another
    /// company's lock answers exactly as a missing one, not after waiting behind that company's change
    /// of it (nor holding that change up). Checked again in the turn.
    private func requireOwnLock(_ id: LockID, of admin: User) async throws {
        guard try await services.store.lock(id, in: admin.companyID) != nil else { throw APIError.notFound(.lockNotFound) }
    }

    /// The company's lock `id`, unless it is retired: 404 `lock_not_found`, 409 `lock_retired` titled `retired`.
    private func unretiredLock(_ id: LockID, of admin: User, retired: String = "The lock is retired") async throws -> Lock {
        guard let lock = try await services.store.lock(id, in: admin.companyID) else { throw APIError.notFound(.lockNotFound) }
        guard lock.state != .retired else { throw APIError.conflict(.lockRetired, retired) }
        return lock
    }

    /// Registration, activation, retirement and a new broker password each change a lock's row and
    /// its broker account, or rely on the account, in several steps. For one device id they take
    /// turns, so none sees another half done: a new password made between a retirement's broker and
    /// database steps would otherwise give a retired lock a working account again, and a registration
    /// by another company once the lock's hold lapsed would replace the account of a lock being
    /// activated. The admin is checked again once the turn comes, before
    /// the broker is touched: one demoted, disabled or signed out while the change waited (up to
    /// ``AppServices/lockTurnWait``) does not finish it.
    private func inTurn<T>(_ id: LockID, as identity: Identity, _ body: () async throws -> T) async throws -> T {
        let turns = services.lockAccountTurns
        guard await turns.acquire(id, deadline: .now + AppServices.lockTurnWait) else { throw APIError.lockAccountBusy }
        defer { turns.release(id) }
        try await services.store.verifyAdmin(services.adminCheck(identity))
        return try await body()
    }

    /// Logs and audits (as an error, `broker_unavailable`) a change to a lock's broker account the
    /// broker did not make; the caller gives the answer.
    private func brokerFailed(
        _ action: AuditAction, by admin: User, lock: LockID, room: RoomID?, error: any Error, _ message: Logger.Message
    ) async throws {
        services.logger.error(message, metadata: ["lock": "\(lock)", "error": "\(error)"])
        try await services.store.append(
            services.audit(action, by: admin, company: admin.companyID, outcome: .error, reason: .brokerUnavailable, lock: lock, room: room))
    }

    static func problem(for failure: ActivationFailure) -> APIError {
        switch failure {
        case .notInPairingMode:
            APIError(
                .conflict, code: .notInPairingMode, title: "The lock is not in pairing mode",
                detail: "Press the lock's pairing button, then try again.")
        case .alreadyActivated:
            APIError(.conflict, code: .alreadyActivated, title: "The lock is already activated", detail: "Factory reset the lock to pair it again.")
        case .setupCodeMismatch:
            APIError(
                .unprocessableContent, code: .setupCodeMismatch, title: "The setup code does not match the lock",
                detail: "Nothing was stored. Check the code on the lock's label and try again.")
        case .lockOffline:
            UnlockController.problem(for: .lockOffline)
        case .lockTimeout:
            UnlockController.problem(for: .lockTimeout)
        case .brokerUnavailable:
            UnlockController.problem(for: .brokerUnavailable)
        case .lockDenied:
            APIError(.badGateway, code: .lockDenied, title: "The lock did not accept the pairing")
        }
    }
}
