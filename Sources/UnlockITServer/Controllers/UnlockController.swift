import Foundation
import Hummingbird
import LockProtocol
import Logging
import UnlockITCore

/// `POST /api/v1/locks/{id}/unlock`: the access rule first, then the lock protocol, and one audit
/// event for every attempt. A denied user causes no challenge at all, and a user denied too often
/// is turned away for a while before the rule runs (``DeniedUnlockLimiter``), as is a user over
/// their rate of attempts of any outcome (``RateLimiter``).
///
/// The audit event is handed to the store's write queue, not awaited: the answer goes back as soon
/// as the lock has given it, and the event is committed within about 10 ms (audit reads include
/// it). No attempt starts while that queue is over its bound, so a door never opens without room
/// for its record.
struct UnlockController {
    let services: AppServices

    struct Unlocked: ResponseCodable {
        var lockId: String
        var granted: Bool
        var outcome: String

        /// The body `APIJSON.encoder` would write (sorted keys), written straight into the buffer:
        /// through `JSONEncoder` the answer to every unlock cost ≈ 2 % of the server's CPU under
        /// `wrk -c64`. `UnlockResponseTests` checks the bytes against the encoder's.
        func response(from request: Request, context: some RequestContext) throws -> Response {
            var body = ByteBuffer()
            body.reserveCapacity(48 + lockId.utf8.count + outcome.utf8.count)
            body.writeStaticString(#"{"granted":"#)
            body.writeStaticString(granted ? "true" : "false")
            body.writeStaticString(#","lockId":"#)
            body.writeJSONString(lockId)
            body.writeStaticString(#","outcome":"#)
            body.writeJSONString(outcome)
            body.writeStaticString("}")
            var headers = HTTPFields()
            headers.reserveCapacity(4)
            headers[.contentType] = "application/json; charset=utf-8"
            headers[.contentLength] = String(body.readableBytes)
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: body))
        }
    }

    func addRoutes(to group: RouterGroup<AppContext>) {
        group.post("locks/:id/unlock", use: unlock)
    }

    @Sendable func unlock(request: Request, context: AppContext) async throws -> Unlocked {
        let start = ContinuousClock.now
        let user = try context.requireIdentity(allowingDisabled: true).user
        let lockID = try LocksController.lockID(context)
        if let wait = services.deniedUnlockLimiter.wait(for: user.id, now: services.clock.now()) {
            // Not a decision, so not audited one by one: the denial that reached the limit was.
            services.metrics.unlock(outcome: AuditReason.throttled.rawValue, duration: start.duration(to: .now))
            throw APIError.tooManyDeniedUnlocks(retryAfter: wait)
        }
        // Before the attempt is counted: one the server turns away for its own reasons costs the
        // user nothing, and the `rate_limited` event below has room too.
        guard services.store.auditHasRoom else {
            services.logger.warning("unlock refused: the audit log's write queue is full")
            throw APIError.auditBehind
        }
        if let refusal = services.unlockLimiter.take(user.id, now: start) {
            services.metrics.unlock(outcome: AuditReason.rateLimited.rawValue, duration: start.duration(to: .now))
            // Recorded once a minute while the user keeps trying, not for each attempt turned away.
            if refusal.isFirstInAMinute {
                services.logger.notice("unlocks paused for a user over their rate", metadata: ["user": "\(user.id)"])
                services.store.enqueue(
                    services.audit(.unlock, by: user, company: user.companyID, outcome: .denied, reason: .rateLimited, lock: lockID, room: nil))
            }
            throw APIError.tooManyUnlocks(retryAfter: refusal.wait)
        }
        func record(_ outcome: AuditOutcome, _ reason: AuditReason, room: RoomID?) {
            services.store.enqueue(
                services.audit(.unlock, by: user, company: user.companyID, outcome: outcome, reason: reason, lock: lockID, room: room))
            services.metrics.unlock(outcome: reason.rawValue, duration: start.duration(to: .now))
        }
        // A denial of the user's own making: counted, and the one that reaches the limit is followed
        // in the log by a `throttled` event.
        func deny(_ reason: AuditReason, room: RoomID?) {
            record(.denied, reason, room: room)
            guard services.deniedUnlockLimiter.denied(user.id, now: services.clock.now()) else { return }
            services.logger.notice("unlocks paused for a user denied too often", metadata: ["user": "\(user.id)"])
            services.store.enqueue(
                services.audit(.unlock, by: user, company: user.companyID, outcome: .denied, reason: .throttled, lock: lockID, room: room))
        }

        // Another company's lock is reported exactly as a missing one.
        guard let (lock, room, sealedKey) = try await services.store.unlockContext(lockID, in: user.companyID, for: user.id) else {
            deny(.lockNotFound, room: nil)
            throw APIError.notFound(.lockNotFound)
        }
        let decision = AccessRule.decide(user: user, lock: lock, room: room)
        guard decision.allowed else {
            deny(AuditReason(decision.reason), room: lock.roomID)
            throw APIError(
                .forbidden, code: .accessDenied, title: "Access denied", detail: "The access rule does not let you open this lock.",
                reason: decision.reason.rawValue)
        }
        guard let sealedKey, let key = try? services.sealer.open(sealedKey, for: lock.id) else {
            record(.error, .keyUnavailable, room: lock.roomID)
            services.logger.error("an active lock has no usable key", metadata: ["lock": "\(lock.id)"])
            throw APIError.internalError
        }

        // The client was told lock_timeout (or lock_offline), and the door opened: the log must say
        // so too, after the event of what the client was told, though the gateway may learn of the
        // opening before this task has recorded that.
        let lateAfterOutcome = AfterFirst()
        let outcome = await services.gateway.unlock(lock.id, key: key) { [services] in
            lateAfterOutcome.second {
                services.store.enqueue(
                    services.audit(
                        .unlock, by: user, company: user.companyID, outcome: .success, reason: .grantedLate, lock: lockID, room: lock.roomID))
            }
        }
        switch outcome {
        case .granted:
            record(.success, outcome.auditReason, room: lock.roomID)
            return Unlocked(lockId: lock.id.rawValue, granted: true, outcome: outcome.rawValue)
        case .lockDenied:
            record(.denied, outcome.auditReason, room: lock.roomID)
        case .lockOffline, .lockTimeout, .brokerUnavailable:
            record(.error, outcome.auditReason, room: lock.roomID)
            lateAfterOutcome.firstDone()
        }
        throw Self.problem(for: outcome)
    }

    static func problem(for outcome: UnlockOutcome) -> APIError {
        switch outcome {
        case .granted:
            return APIError.internalError
        case .lockOffline:
            return APIError(.serviceUnavailable, code: .lockOffline, title: "The lock is offline", reason: outcome.rawValue)
        case .brokerUnavailable:
            return APIError(
                .serviceUnavailable, code: .brokerUnavailable, title: "The server cannot reach the locks' broker", reason: outcome.rawValue)
        case .lockTimeout:
            return APIError(.gatewayTimeout, code: .lockTimeout, title: "The lock did not answer in time", reason: outcome.rawValue)
        case .lockDenied:
            return APIError(.badGateway, code: .lockDenied, title: "The lock refused to open", reason: outcome.rawValue)
        }
    }
}
