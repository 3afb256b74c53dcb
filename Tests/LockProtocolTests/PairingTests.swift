import LockProtocol
import Testing
import UnlockITCore

@Suite struct PairingTests {
    let lock = LockID("lock-pairing-test")!

    @Test func setupCodesParseAsPeopleTypeThem() throws {
        let code = try #require(SetupCode("7KQ2-M9XD-4RTA-WZ3C"))
        #expect(SetupCode("7kq2m9xd4rtawz3c")?.bytes == code.bytes)
        #expect(SetupCode(" 7KQ2 M9XD 4RTA WZ3C ")?.bytes == code.bytes)
        // Crockford's look-alikes.
        #expect(SetupCode("O0II-LL00-0000-0000")?.bytes == SetupCode("0011-1100-0000-0000")?.bytes)
        #expect(SetupCode("7KQ2-M9XD-4RTA-WZ3") == nil)
        #expect(SetupCode("7KQ2-M9XD-4RTA-WZ3CX") == nil)
        #expect(SetupCode("7KQ2-M9XD-4RTA-WZ3U") == nil)
        #expect(SetupCode("") == nil)
    }

    @Test func setupCodesRoundTrip() {
        for _ in 0..<500 {
            let code = SetupCode.random()
            #expect(code.formatted.count == 19)
            #expect(SetupCode(code.formatted)?.bytes == code.bytes)
        }
    }

    @Test func aWrongSetupCodeDoesNotUnwrap() {
        let key = Key128.random()
        let right = SetupCode.random()
        let (wrapped, kcv) = KeyWrap.wrap(key, setupCode: right, lock: lock)
        #expect(KeyWrap.unwrap(wrapped, kcv: kcv, setupCode: right, lock: lock)?.constantTimeEquals(key) == true)
        var misses = 0
        for _ in 0..<200 where KeyWrap.unwrap(wrapped, kcv: kcv, setupCode: .random(), lock: lock) == nil { misses += 1 }
        #expect(misses == 200)
    }

    @Test func theWrappingKeyIsBoundToTheLock() {
        let code = SetupCode.random()
        let other = LockID("lock-other")!
        #expect(KeyWrap.wrappingKey(setupCode: code, lock: lock).bytes != KeyWrap.wrappingKey(setupCode: code, lock: other).bytes)
        let key = Key128.random()
        let (wrapped, kcv) = KeyWrap.wrap(key, setupCode: code, lock: lock)
        #expect(KeyWrap.unwrap(wrapped, kcv: kcv, setupCode: code, lock: other) == nil)
    }

    @Test func topicsParse() {
        #expect(Topics.command(lock) == "unlockit/v1/locks/lock-pairing-test/cmd")
        #expect(Topics.parse("unlockit/v1/locks/lock-pairing-test/evt")?.kind == .event)
        #expect(Topics.parse("unlockit/v1/locks/lock-pairing-test/status")?.lock == lock)
        #expect(Topics.parse("unlockit/v1/locks/+/evt") == nil)
        #expect(Topics.parse("unlockit/v1/locks/a/b/evt") == nil)
        #expect(Topics.parse("other/v1/locks/lock-x/evt") == nil)
        #expect(Topics.parse("unlockit/v1/locks/lock-x/cmd")?.kind == .command)
        #expect(Topics.parse("unlockit/v1/locks/lock-x/cmd/") == nil)
        #expect(Topics.parse("unlockit/v1/locks/lock-x/evtx") == nil)
        #expect(Topics.parse("unlockit/v1/locks/lock-x") == nil)
        #expect(Topics.parse("unlockit/v1/locks//evt") == nil)
        #expect(Topics.parse("unlockit/v1/locks/Lock-X/evt") == nil)  // not a lock id
        #expect(Topics.parse("unlockit/v1/locksx/lock-x/evt") == nil)
    }

    @Test func lockIDsAreTopicSafe() {
        #expect(LockID("lock-1") != nil)
        for bad in ["ab", "-lock", "Lock-1", "lock/1", "lock+1", "lock#1", "$lock", String(repeating: "a", count: 65), "lock 1"] {
            #expect(LockID(bad) == nil, "\(bad)")
        }
    }

    /// docs/protocol.md's test vector, computed independently (Python's hmac, RFC 5869 by hand).
    @Test func aFactoryIDIsDerivedFromItsSetupCode() throws {
        let code = try #require(SetupCode("7KQ2-M9XD-4RTA-WZ3C"))
        #expect(code.bytes == Hex.decode("3cee2a27ad2634ae7c6c"))
        let id = FactoryID.of(code, salt: try #require(Hex.decode("5e1f0a9c3b27")))
        #expect(id.rawValue == "lock-5e1f0a9c3b273c81f4503c9286ce8adf")
        #expect(id.hasFactoryForm && FactoryID.matches(id, code))
        // Another code, the same tag under another salt, or an id one digit off, does not match.
        #expect(!FactoryID.matches(id, try #require(SetupCode("7KQ2-M9XD-4RTA-WZ3D"))))
        #expect(!FactoryID.matches(try #require(LockID("lock-5e1f0a9c3b283c81f4503c9286ce8adf")), code))
        #expect(!FactoryID.matches(try #require(LockID("lock-5e1f0a9c3b273c81f4503c9286ce8ade")), code))
        // Only `lock-` and exactly 32 lowercase hex digits has the form.
        for other in [
            "lock-5e1f0a9c3b273c81f4503c9286ce8ad", "lock-5e1f0a9c3b273c81f4503c9286ce8adf0", "lock-5e1f0a9c3b273c81f4503c9286ce8adg",
            "door-5e1f0a9c3b273c81f4503c9286ce8adf", "lock-3f9a0c1b7d2e",
        ] {
            #expect(try #require(LockID(other)).hasFactoryForm == false, "\(other)")
        }
        // Each new lock has a salt of its own: one code gives different ids.
        #expect(FactoryID.of(code) != FactoryID.of(code))
        // A fresh code's id is a factory id of its code.
        let fresh = SetupCode.random()
        #expect(FactoryID.matches(FactoryID.of(fresh), fresh))
    }
}
