import Testing
import UnlockITCore

@Suite struct ValidationTests {
    @Test func emailsAreNormalised() {
        #expect(Validation.email("  Alice@Example.COM ") == "alice@example.com")
        for bad in ["", "alice", "alice@", "@example.com", "alice@example", "a b@example.com", "alice@.com", "alice@example..com", "a@b@c.d"] {
            #expect(Validation.email(bad) == nil, "\(bad)")
        }
        #expect(Validation.email(String(repeating: "a", count: 250) + "@x.dk") == nil)
    }

    @Test func passwordsAreTwelveToOneHundredTwentyEightCharacters() {
        #expect(!Validation.password(String(repeating: "a", count: 11)))
        #expect(Validation.password(String(repeating: "a", count: 12)))
        #expect(Validation.password(String(repeating: "æ", count: 128)))
        #expect(!Validation.password(String(repeating: "a", count: 129)))
        #expect(!Validation.password("twelve chars\u{0}"))
        #expect(Validation.password("correct horse battery staple"))
        // Code points, not what the eye counts: six accented letters written with combining accents
        // are twelve; 65 of them are 130, too long.
        #expect(Validation.password(String(repeating: "e\u{301}", count: 6)))
        #expect(!Validation.password(String(repeating: "e\u{301}", count: 65)))
        #expect(!Validation.password(String(repeating: "é", count: 11)))
    }

    @Test func namesAndLevels() {
        #expect(Validation.name("  Lab 2 ") == "Lab 2")
        #expect(Validation.name("") == nil)
        #expect(Validation.name("a\u{7}b") == nil)
        #expect(Validation.name(String(repeating: "x", count: 101)) == nil)
        #expect(Validation.level(-1) == nil)
        #expect(Validation.level(0) == 0)
        #expect(Validation.level(Validation.maximumLevel + 1) == nil)
        #expect(Validation.description("line one\nline two") != nil)
    }

    @Test func identifiersParseOnlyUUIDs() {
        #expect(UserID("not-a-uuid") == nil)
        #expect(UserID("") == nil)
        let id = UserID.generate()
        #expect(UserID(id.rawValue.uppercased()) == id)
        #expect(UserID(id.rawValue + " ") == nil)
    }
}
