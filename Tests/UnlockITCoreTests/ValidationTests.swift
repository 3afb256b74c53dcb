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

    @Test func anEmailIsOneAddressHoweverItsLettersWereComposed() {
        // Swift's == holds for canonically equivalent strings; the database compares code points.
        func scalars(_ text: String?) -> [UInt32] { text.map { $0.unicodeScalars.map(\.value) } ?? [] }
        let composed = scalars("jos\u{E9}@firma.dk")
        #expect(scalars(Validation.email("Jos\u{E9}@Firma.dk")) == composed)
        #expect(scalars(Validation.email("Jose\u{301}@firma.dk")) == composed)
        #expect(scalars(Validation.email("JOSE\u{301}@FIRMA.DK")) == composed)
        // Invisible, format, separator and C1 control characters would make twins that look alike.
        for bad in [
            "jo\u{200B}se@firma.dk", "jose@firma\u{202E}.dk", "jose\u{00A0}@firma.dk", "jo\u{0085}se@firma.dk", "jo\u{00AD}se@firma.dk",
            "jose@firma.dk\u{2028}x", "jo\u{FEFF}se@firma.dk", "jo\u{E000}se@firma.dk",
        ] {
            #expect(Validation.email(bad) == nil, "\(bad.unicodeScalars.map { String($0.value, radix: 16) })")
        }
        #expect(Validation.email("åse.øster@ærø.dk") == "åse.øster@ærø.dk")
    }

    /// `count` letters with no pattern: neither repeated nor a run.
    static func varied(_ count: Int, from letters: String = "abcdefghijklmnopqrstuvwxyz") -> String {
        let letters = Array(letters)
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        return String(
            (0..<count).map { _ in
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                return letters[Int(state >> 33) % letters.count]
            })
    }

    @Test func passwordsAreTwelveToOneHundredTwentyEightCharacters() {
        #expect(!Validation.password(Self.varied(11)))
        #expect(Validation.password(Self.varied(12)))
        #expect(Validation.password(Self.varied(128, from: "æøåäöü")))
        #expect(!Validation.password(Self.varied(129)))
        #expect(!Validation.password("twelve chars\u{0}"))
        #expect(Validation.password("correct horse battery staple"))
        // Code points, not what the eye counts: six accented letters written with combining accents
        // are twelve; 65 of them are 130, too long.
        #expect(Validation.password("a\u{301}e\u{301}i\u{301}o\u{301}u\u{301}y\u{301}"))
        #expect(!Validation.password(String(repeating: "e\u{301}", count: 65)))
        #expect(!Validation.password(Self.varied(11, from: "éáí")))
    }

    @Test("Passwords guessed first whatever their length are refused: repeated, runs, and the words of their context")
    func guessablePasswords() {
        let context = ["ann.hansen@acme.example", "Ann Hansen"]
        let refused = [
            // One piece repeated, the last copy perhaps cut short.
            "aaaaaaaaaaaa", "abcabcabcabc", "passwordpassword", "2026202620262", "e\u{301}e\u{301}e\u{301}e\u{301}e\u{301}e\u{301}",
            // Runs along the alphabet, the digits or a keyboard row, either way and round again.
            "abcdefghijkl", "lkjihgfedcba", "123456789012", "098765432109", "qwertyuiopas", "QWERTYUIOPASDFGH", "asdfghjklzxcvbnm", "azertyuiopqs",
            // The service's name, the user's email or name, with digits, spaces or punctuation.
            "Unlockit2026!", "unlock it 2026!", "ann.hansen@acme.example", "ANN.HANSEN@ACME.EXAMPLE", "Hansen 1985!!!", "annhansen2026",
            "acme12345678",
            // Fullwidth letters are the same as they are hashed (NFKC).
            "\u{FF55}\u{FF4E}\u{FF4C}\u{FF4F}\u{FF43}\u{FF4B}\u{FF49}\u{FF54}2026!",
        ]
        for password in refused {
            #expect(!Validation.password(password, context: context), "\(password)")
        }
        let accepted = [
            "correct horse battery staple", "847261930475", "Hansen's 3 red bicycles", "Ann and the 12 lanterns", "qwerty is not my password",
            "aaaaaaaaaaab", "abcdefghijkm",
        ]
        for password in accepted {
            #expect(Validation.password(password, context: context), "\(password)")
        }
        // The name is context only where it is given.
        #expect(Validation.password("Hansen 1985!!!"))
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
        // Invisible formatting would make names that look alike, or are shown backwards.
        for hidden in ["Lab\u{200B}", "\u{202E}baL", "La\u{00AD}b", "Lab\u{2028}2", "\u{2066}Lab\u{2069}", "\u{FEFF}Lab"] {
            #expect(Validation.name(hidden) == nil, "\(hidden.unicodeScalars.map { String($0.value, radix: 16) })")
            #expect(Validation.description(hidden) == nil)
        }
        // The joiners that names and emoji need stay.
        #expect(Validation.name("می\u{200C}خواهم") != nil)
        #expect(Validation.name("👩\u{200D}🔬 Lab") != nil)
        // Lengths are code points as sent, as the API document's minLength and maxLength count them:
        // a letter and its combining accent are two, and the spaces trimmed count too.
        #expect(Validation.name("a" + String(repeating: "\u{301}", count: 1000)) == nil)
        #expect(Validation.name("e\u{301}" + String(repeating: "x", count: 98)) != nil)
        #expect(Validation.name("e\u{301}" + String(repeating: "x", count: 99)) == nil)
        #expect(Validation.name(" " + String(repeating: "x", count: 99)) == String(repeating: "x", count: 99))
        #expect(Validation.name(" " + String(repeating: "x", count: 100)) == nil)
        #expect(Validation.description(String(repeating: "x", count: 1000)) != nil)
        #expect(Validation.description("e\u{301}" + String(repeating: "x", count: 999)) == nil)
    }

    @Test func identifiersParseOnlyUUIDs() {
        #expect(UserID("not-a-uuid") == nil)
        #expect(UserID("") == nil)
        let id = UserID.generate()
        #expect(UserID(id.rawValue.uppercased()) == id)
        #expect(UserID(id.rawValue + " ") == nil)
    }

    @Test("The base64url alphabet: the 64 characters of RFC 4648's table, and no byte else")
    func base64URLAlphabet() {
        let table = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        for byte in UInt8.min...UInt8.max {
            #expect(Base64URL.isAlphabet(byte) == table.contains(byte), "\(byte)")
        }
    }
}
