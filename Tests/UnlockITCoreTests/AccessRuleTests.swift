import Foundation
import Testing
import UnlockITCore

@Suite struct AccessRuleTests {
    let company = CompanyID.generate()
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func user(level: Int, enabled: Bool = true, role: Role = .employee, company: CompanyID? = nil) -> User {
        User(
            id: .generate(), companyID: company ?? self.company, email: "u@x.test", name: "U", role: role, securityLevel: level, enabled: enabled,
            mustChangePassword: false, createdAt: now, updatedAt: now)
    }

    func room(required: Int?, authorized: Set<UserID> = []) -> Room {
        Room(
            id: .generate(), companyID: company, name: "R", description: "", type: .office, bookable: false, requiredLevel: required,
            authorizedUsers: authorized, createdAt: now, updatedAt: now)
    }

    func lock(in room: Room, state: LockState = .active) -> Lock {
        Lock(id: LockID("lock-rule")!, companyID: room.companyID, roomID: room.id, name: "L", state: state, createdAt: now)
    }

    @Test func levelAtOrAboveTheRoomsOpens() {
        let room = room(required: 3)
        #expect(AccessRule.decide(user: user(level: 3), lock: lock(in: room), room: room) == AccessDecision(.levelSufficient))
        #expect(AccessRule.decide(user: user(level: 9), lock: lock(in: room), room: room).allowed)
        #expect(AccessRule.decide(user: user(level: 2), lock: lock(in: room), room: room) == AccessDecision(.levelTooLow))
    }

    @Test func theAuthorizedListOverridesTheLevel() {
        let person = user(level: 0)
        let room = room(required: 5, authorized: [person.id])
        #expect(AccessRule.decide(user: person, lock: lock(in: room), room: room) == AccessDecision(.authorizedUser))
    }

    @Test func aRoomWithoutARequiredLevelAdmitsOnlyItsList() {
        let listed = user(level: 0)
        let room = room(required: nil, authorized: [listed.id])
        #expect(AccessRule.decide(user: listed, lock: lock(in: room), room: room).allowed)
        #expect(AccessRule.decide(user: user(level: Validation.maximumLevel), lock: lock(in: room), room: room) == AccessDecision(.notAuthorized))
    }

    @Test func deniesInAFixedOrder() {
        let room = room(required: 0)
        let foreigner = user(level: 10, enabled: false, company: .generate())
        // Other company first, even if also disabled and the lock inactive.
        #expect(AccessRule.decide(user: foreigner, lock: lock(in: room, state: .registered), room: room).reason == .otherCompany)
        #expect(AccessRule.decide(user: user(level: 10, enabled: false), lock: lock(in: room, state: .retired), room: room).reason == .userDisabled)
        for state in [LockState.registered, .retired] {
            #expect(AccessRule.decide(user: user(level: 10), lock: lock(in: room, state: state), room: room).reason == .lockInactive)
        }
    }

    @Test func adminsFollowTheSameRule() {
        let room = room(required: 4)
        #expect(AccessRule.decide(user: user(level: 1, role: .admin), lock: lock(in: room), room: room).reason == .levelTooLow)
    }

    @Test func aMissingOrMismatchedRoomAdmitsNobody() {
        let room = room(required: 0)
        let other = self.room(required: 0)
        #expect(AccessRule.decide(user: user(level: 5), lock: lock(in: room), room: nil).reason == .notAuthorized)
        #expect(AccessRule.decide(user: user(level: 5), lock: lock(in: room), room: other).reason == .notAuthorized)
    }

    @Test func everyReasonSaysWhetherItAllows() {
        #expect(AccessReason.allCases.filter(\.allows) == [.levelSufficient, .authorizedUser])
    }
}
