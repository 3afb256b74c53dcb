import Foundation
import Glibc
import Posix
import SiteHarness
import Synchronization
import Testing

/// The `unlockit` CLI as admins and employees use it, against a real server, mosquitto and lock,
/// once in English and once in Danish, asserting the actual text.
@Suite(.serialized, .timeLimit(.minutes(10)))
struct CLIEndToEndTests {
    /// One person's CLI: their own config folder (credentials file) and language.
    struct Person {
        let home: String
        let language: String

        struct Result {
            let status: Int32
            let stdout: String
            let stderr: String
            var json: [String: any Sendable] { (try? JSONSerialization.jsonObject(with: Data(stdout.utf8)) as? [String: any Sendable]) ?? [:] }
            var items: [[String: any Sendable]] { json["items"] as? [[String: any Sendable]] ?? [] }
        }

        var credentialsPath: String { "\(home)/unlockit/credentials" }

        /// Runs the CLI; with `stdoutTo`, its stdout goes to that file (`/dev/full`: every write fails).
        @discardableResult
        func run(_ arguments: [String], stdin: [String] = [], environment: [String: String] = [:], stdoutTo: String? = nil) async throws -> Result {
            var env = ["XDG_CONFIG_HOME": home, "TZ": "UTC", "LANG": "C", "LC_ALL": "", "LC_MESSAGES": "", "UNLOCKIT_LANG": ""]
            for (key, value) in environment { env[key] = value }
            var command = (try Binaries.path("unlockit"), ["--lang", language] + arguments)
            if let stdoutTo {
                env["UNLOCKIT_TEST_STDOUT"] = stdoutTo
                command = ("/bin/sh", [#"exec "$0" "$@" >"$UNLOCKIT_TEST_STDOUT""#, command.0] + command.1)
                command.1.insert("-c", at: 0)
            }
            let process = try ChildProcess(command.0, command.1, environment: env, name: "unlockit", separateErrors: true)
            for line in stdin { process.send(line) }
            process.closeInput()
            let status = try await process.waitForExit(timeout: .seconds(60))
            try await Task.sleep(for: .milliseconds(20))  // the readers' last lines
            return Result(status: status, stdout: process.output.joined(separator: "\n"), stderr: process.errors.joined(separator: "\n"))
        }
    }

    /// Expected text, by language.
    static let text: [String: [String: String]] = [
        "en": [
            "signedIn": "Signed in as admin@acme.test (admin)", "firstLogin": "This is your first sign-in: choose your own password.",
            "threeUsers": "3 Users In Total", "oneRoom": "1 Room", "unlocked": "Unlocked Front door (lock-cli).",
            "denied": "Error: Access denied: your security level is too low for this room.",
            "deniedHint": "See what you can open with: unlockit access", "granted": "opened",
            "levelTooLow": "your security level is too low for this room", "auditLevelTooLow": "security level too low for the room",
            "levelChange": "Level: 1 → 2", "roleChange": "Role: employee → admin", "roomChange": "Room: Lab → Annex",
            "expired": "Error: Your session has expired or was ended.", "logInAgain": "Sign in again with: unlockit login",
            "exposed": "can be read by other users", "chmod": "chmod 600", "notSignedIn": "Error: You are not signed in.",
            "adminOnly": "Error: Only an admin may do this.", "offline": "Error: The lock is offline.", "unreachable": "cannot be reached",
            "wrongCode": "Error: The setup code does not match the lock; nothing was stored.", "line3": "Line 3: not a valid email address",
            "nothingImported": "1 row was rejected, so nothing was imported.", "dryRun": "Dry run: 2 users would be created.",
            "activated": "Activated lock-cli.", "usage": "Error: The command could not be understood.",
            "otherServer": "Error: You are signed in to", "notRevoked": "the session stays valid on it until",
            "insecure": "is plain http to another machine",
            "paused": "Error: Too many of your unlock attempts were denied, so unlocking is paused for you.",
            "reset": "clerk@acme.test has a new initial password and was signed out everywhere.",
            "badLockID": "Error: lock-cli/retire? is not a lock id.",
            "newBrokerPassword": "lock-cli has a new broker password; the old one no longer works.",
            "notAFile": "is a symbolic link or not a regular file", "notYours": "belongs to another user",
            "initial": "Initial password (shown once; it must be changed at first sign-in): ",
            "noToken": "Error: Standard input ended before an ID token was read.", "tokenInvalid": "Error: The ID token could not be verified.",
            "previousNotEnded": "could not be ended there: it stays valid on that server until",
            "disabled": "Error: This account is disabled.",
        ],
        "da": [
            "signedIn": "Logget ind som admin@acme.test (administrator)", "firstLogin": "Dette er dit første login: vælg din egen adgangskode.",
            "threeUsers": "3 Brugere I Alt", "oneRoom": "1 Rum", "unlocked": "Front door (lock-cli) er låst op.",
            "denied": "Fejl: Adgang nægtet: dit sikkerhedsniveau er for lavt til dette rum.",
            "deniedHint": "Se, hvad du kan åbne, med: unlockit access", "granted": "åbnet",
            "levelChange": "Niveau: 1 → 2", "roleChange": "Rolle: medarbejder → administrator", "roomChange": "Rum: Lab → Annex",
            "levelTooLow": "dit sikkerhedsniveau er for lavt til dette rum", "auditLevelTooLow": "sikkerhedsniveauet er for lavt til rummet",
            "expired": "Fejl: Din session er udløbet eller blevet afsluttet.",
            "logInAgain": "Log ind igen med: unlockit login", "exposed": "kan læses af andre brugere", "chmod": "chmod 600",
            "notSignedIn": "Fejl: Du er ikke logget ind.", "adminOnly": "Fejl: Kun en administrator må gøre dette.",
            "offline": "Fejl: Låsen er offline.", "unreachable": "kan ikke nås",
            "wrongCode": "Fejl: Opsætningskoden passer ikke til låsen; intet blev gemt.", "line3": "Linje 3: ikke en gyldig e-mailadresse",
            "nothingImported": "1 række blev afvist, så intet blev importeret.", "dryRun": "Prøvekørsel: 2 brugere ville blive oprettet.",
            "activated": "lock-cli er aktiveret.", "usage": "Fejl: Kommandoen kunne ikke forstås.",
            "otherServer": "Fejl: Du er logget ind på", "notRevoked": "sessionen er gyldig på den indtil",
            "insecure": "er almindelig http til en anden maskine",
            "paused": "Fejl: For mange af dine forsøg på at låse op blev afvist, så oplåsning er sat på pause for dig.",
            "newBrokerPassword": "lock-cli har en ny broker-adgangskode; den gamle virker ikke længere.",
            "reset": "clerk@acme.test har fået en ny startadgangskode og er logget ud overalt.",
            "badLockID": "Fejl: lock-cli/retire? er ikke et lås-id.",
            "notAFile": "er et symbolsk link eller ikke en almindelig fil", "notYours": "tilhører en anden bruger",
            "initial": "Startadgangskode (vises én gang; den skal skiftes ved første login): ",
            "noToken": "Fejl: Standard input sluttede, før et ID-token blev læst.", "tokenInvalid": "Fejl: ID-tokenet kunne ikke verificeres.",
            "previousNotEnded": "kunne ikke afsluttes: den er gyldig på den server indtil",
            "disabled": "Fejl: Denne konto er deaktiveret.",
        ],
    ]

    @Test("An admin and two employees run a site with the CLI", arguments: ["en", "da"])
    func adminAndEmployees(language: String) async throws {
        let t = Self.text[language]!
        try await Site.with(serverEnvironment: ["UNLOCKIT_DENIED_UNLOCKS_PER_MINUTE": "2"]) { site in
            let server = "http://127.0.0.1:\(site.server.port)"
            let admin = Person(home: "\(site.directory.path)/admin-home", language: language)
            let boss = Person(home: "\(site.directory.path)/boss-home", language: language)
            let clerk = Person(home: "\(site.directory.path)/clerk-home", language: language)

            // An ID token from standard input ("-"): none there is an error of its own; one read is
            // sent (and refused: this server trusts no issuer).
            let noToken = try await admin.run(["login", "--server", server, "--id-token", "-", "--client-id", "cli"])
            #expect(noToken.status == 64 && noToken.stderr.contains(t["noToken"]!), "\(noToken)")
            let badToken = try await admin.run(["login", "--server", server, "--id-token", "-", "--client-id", "cli"], stdin: ["not.a.token"])
            #expect(badToken.stderr.contains(t["tokenInvalid"]!), "\(badToken)")

            // Sign in: the first-login password change happens inside login.
            let initial = try await site.server.bootstrap(company: "Acme", adminEmail: "admin@acme.test")
            let login = try await admin.run(
                ["login", "--server", server, "--email", "admin@acme.test", "--password-stdin"], stdin: [initial, "the admin's own password"])
            #expect(login.status == 0, "\(login)")
            #expect(login.stdout.contains(t["signedIn"]!))
            #expect(login.stderr.contains(t["firstLogin"]!))
            #expect(FileStatus(linkAt: admin.credentialsPath)?.permissions == 0o600)

            // Users, a room, an authorization-free level rule.
            for (email, level) in [("boss@acme.test", 5), ("clerk@acme.test", 1)] {
                let added = try await admin.run(
                    ["users", "add", "--email", email, "--name", email, "--level", "\(level)", "--password-stdin"], stdin: ["initial password 1"])
                #expect(added.status == 0, "\(added)")
            }
            let users = try await admin.run(["users", "list"])
            #expect(users.stdout.contains(t["threeUsers"]!))
            #expect(try await admin.run(["rooms", "add", "Lab", "--type", "office", "--level", "3"]).status == 0)
            #expect(try await admin.run(["rooms", "list"]).stdout.contains(t["oneRoom"]!))

            // A lock: register (credentials shown once), boot it in pairing mode, activate it.
            let registered = try await admin.run(["locks", "add", "lock-cli", "--name", "Front door", "--room", "Lab", "--json"])
            #expect(registered.status == 0, "\(registered)")
            let password = try #require((registered.json["mqtt"] as? [String: any Sendable])?["password"] as? String)
            let lock = try await TestLock(id: "lock-cli", directory: site.directory.path)
            try await lock.start(broker: site.broker.url, password: password, pairing: true)
            try await Self.waitUntilOnline(admin, true)
            let wrongCode = try await admin.run(["locks", "activate", "lock-cli", "--setup-code", "AAAA-BBBB-CCCC-DDDD"])
            #expect(wrongCode.status == 1)
            #expect(wrongCode.stderr.contains(t["wrongCode"]!))
            let activated = try await admin.run(["locks", "activate", "lock-cli", "--setup-code", lock.setupCode])
            #expect(activated.stdout.contains(t["activated"]!), "\(activated)")

            // The employees sign in (changing their passwords) and try the door.
            for person in [boss, clerk] {
                let email = person.home.contains("boss") ? "boss@acme.test" : "clerk@acme.test"
                let signedIn = try await person.run(
                    ["login", "--server", server, "--email", email, "--password-stdin"], stdin: ["initial password 1", "my own password 1"])
                #expect(signedIn.status == 0, "\(signedIn)")
            }
            let opened = try await boss.run(["unlock", "Lab"])
            #expect(opened.status == 0, "\(opened)")
            #expect(opened.stdout == t["unlocked"]!)
            let refused = try await clerk.run(["unlock", "lock-cli"])
            #expect(refused.status == 5)
            #expect(refused.stderr.contains(t["denied"]!), "\(refused)")
            #expect(refused.stderr.contains(t["deniedHint"]!))
            #expect(!refused.stderr.contains("{"))
            // Denied twice in a minute (the site's limit here), the clerk is paused for a while.
            #expect(try await clerk.run(["unlock", "lock-cli"]).status == 5)
            let paused = try await clerk.run(["unlock", "lock-cli"])
            #expect(paused.status == 5, "\(paused)")
            #expect(paused.stderr.contains(t["paused"]!), "\(paused)")
            // A wrong current password is a wrong password (3), as at sign-in.
            let wrongCurrent = try await boss.run(["passwd", "--password-stdin"], stdin: ["not my password", "another password 9"])
            #expect(wrongCurrent.status == 3, "\(wrongCurrent)")
            let access = try await clerk.run(["access"])
            #expect(access.stdout.contains(t["levelTooLow"]!))

            // The audit log shows both, in the chosen language.
            let audit = try await admin.run(["audit", "--action", "unlock"])
            #expect(audit.stdout.contains("boss@acme.test") && audit.stdout.contains(t["granted"]!), "\(audit)")
            // Said of the user, not to the admin reading it.
            #expect(audit.stdout.contains("clerk@acme.test") && audit.stdout.contains(t["auditLevelTooLow"]!), "\(audit)")
            #expect(!audit.stdout.contains(t["levelTooLow"]!), "\(audit)")
            // An admin's change says what it set, before and after.
            #expect(try await admin.run(["users", "edit", "clerk@acme.test", "--level", "2", "--role", "admin"]).status == 0)
            #expect(try await admin.run(["users", "edit", "clerk@acme.test", "--role", "employee"]).status == 0)
            let edits = try await admin.run(["audit", "--action", "update_user"])
            #expect(edits.stdout.contains(t["levelChange"]!) && edits.stdout.contains(t["roleChange"]!), "\(edits)")

            // An employee is not an admin.
            let forbidden = try await clerk.run(["users", "list"])
            #expect(forbidden.status == 4)
            #expect(forbidden.stderr.contains(t["adminOnly"]!))

            // An unreachable lock.
            await lock.stop()
            try await Self.waitUntilOnline(admin, false)
            let offline = try await boss.run(["unlock", "Lab"])
            #expect(offline.status == 6)
            #expect(offline.stderr.contains(t["offline"]!))

            // A new broker password for it: confirmed first, shown once; the lock comes back with it.
            let unconfirmed = try await admin.run(["locks", "broker-password", "lock-cli"])
            #expect(unconfirmed.status == 64, "\(unconfirmed)")
            let reissued = try await admin.run(["locks", "broker-password", "lock-cli", "--yes"])
            #expect(reissued.status == 0, "\(reissued)")
            #expect(reissued.stdout.contains(t["newBrokerPassword"]!), "\(reissued)")
            let words = reissued.stdout.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init)
            let newPassword = try #require(words.first { $0.count == 64 && $0.allSatisfy(\.isHexDigit) })
            #expect(newPassword != password)
            try await lock.start(broker: site.broker.url, password: newPassword, pairing: false)
            try await Self.waitUntilOnline(admin, true)
            #expect(try await boss.run(["unlock", "Lab"]).status == 0)

            // A disabled account is told so. Its attempts on a door named by id still reach the
            // server, which refuses and records them (the second reaches the site's limit of two
            // denials a minute, which is recorded too, and the third is paused, not recorded); a
            // room's name cannot be resolved without the account's list of doors, so those attempts
            // stay with the CLI.
            #expect(try await admin.run(["users", "edit", "boss@acme.test", "--disable"]).status == 0)
            for target in [["lock-cli"], ["Lab", "--lock", "lock-cli"], ["Front office"], ["Lab"], ["lock-cli"]] {
                let refused = try await boss.run(["unlock"] + target)
                #expect(refused.status == 4, "\(target): \(refused)")
                #expect(refused.stderr.contains(t["disabled"]!), "\(target): \(refused)")
            }
            let attempts = try await admin.run(["audit", "--user", "boss@acme.test", "--action", "unlock", "--outcome", "denied", "--json"])
            #expect(attempts.items.compactMap { $0["reason"] as? String }.sorted() == ["throttled", "user_disabled", "user_disabled"], "\(attempts)")
            #expect(attempts.items.allSatisfy { $0["lockId"] as? String == "lock-cli" }, "\(attempts)")
            #expect(try await lock.stats()["openings"] == 1, "since its restart, the granted unlock only")
            await lock.stop()
            try await Self.waitUntilOnline(admin, false)

            // Usage errors.
            let usage = try await admin.run(["users", "list", "--no-such-option"])
            #expect(usage.status == 64)
            #expect(usage.stderr.contains(t["usage"]!))
            // A lock id goes into the URL's path: one that would name another endpoint is refused here.
            let smuggled = try await admin.run(["unlock", "--lock", "lock-cli/retire?"])
            #expect(smuggled.status == 64, "\(smuggled)")
            #expect(smuggled.stderr.contains(t["badLockID"]!), "\(smuggled)")
            let stillThere = try await admin.run(["locks", "show", "lock-cli", "--json"])
            #expect(stillThere.stdout.contains(#""state" : "active""#), "\(stillThere)")
            // Renamed in place (the room stays, and with it who may open it).
            let renamed = try await admin.run(["locks", "edit", "lock-cli", "--name", "Lab door"])
            #expect(renamed.status == 0, "\(renamed)")
            #expect(try await admin.run(["locks", "show", "lock-cli", "--json"]).json["name"] as? String == "Lab door")
            #expect(try await admin.run(["locks", "edit", "lock-cli"]).status == 64)
            // Moved to another room; the log names both rooms.
            #expect(try await admin.run(["rooms", "add", "Annex", "--type", "office", "--level", "1"]).status == 0)
            #expect(try await admin.run(["locks", "edit", "lock-cli", "--room", "Annex"]).status == 0)
            let move = try await admin.run(["audit", "--action", "update_lock"])
            #expect(move.stdout.contains(t["roomChange"]!), "\(move)")
            // A factory device id is registered only with its setup code, asked for (here on stdin) when not given.
            let factory = try await TestLock(directory: site.directory.path, name: "factory")
            let factoryAdd = ["locks", "add", factory.id, "--name", "Back door", "--room", "Lab"]
            let notItsCode = try await admin.run(factoryAdd, stdin: [lock.setupCode])
            #expect(notItsCode.status == 1 && notItsCode.stderr.contains(t["wrongCode"]!), "\(notItsCode)")
            let withItsCode = try await admin.run(factoryAdd, stdin: [factory.setupCode])
            #expect(withItsCode.status == 0, "\(withItsCode)")
            #expect(!withItsCode.stdout.contains(factory.setupCode) && !withItsCode.stderr.contains(factory.setupCode))

            // A password reset: the server chooses the password, shown once, and it signs the clerk in
            // (who must then choose their own); or the admin gives one on stdin.
            // Not undone, so asked first: without a terminal to ask on, only --yes does it.
            let unconfirmedReset = try await admin.run(["users", "reset-password", "clerk@acme.test"])
            #expect(unconfirmedReset.status == 64, "\(unconfirmedReset)")
            #expect(try await clerk.run(["access"]).status == 0)
            let chosen = try await admin.run(["users", "reset-password", "clerk@acme.test", "--yes"])
            #expect(chosen.status == 0, "\(chosen)")
            #expect(chosen.stdout.contains(t["reset"]!), "\(chosen)")
            let serverPassword = try #require(
                chosen.stdout.split(separator: "\n").first { $0.hasPrefix(t["initial"]!) }.map { String($0.dropFirst(t["initial"]!.count)) })
            #expect(serverPassword.count >= 16)
            #expect(try await clerk.run(["access"]).status == 3)
            let again = try await clerk.run(
                ["login", "--server", server, "--email", "clerk@acme.test", "--password-stdin"], stdin: [serverPassword, "my own password 2"])
            #expect(again.status == 0, "\(again)")
            let given = try await admin.run(["users", "reset-password", "clerk@acme.test", "--password-stdin", "--yes"], stdin: ["given password 3"])
            #expect(given.status == 0, "\(given)")
            #expect(!given.stdout.contains(t["initial"]!))
            let withGiven = try await clerk.run(
                ["login", "--server", server, "--email", "clerk@acme.test", "--password-stdin"], stdin: ["given password 3", "my own password 3"])
            #expect(withGiven.status == 0, "\(withGiven)")
        }
    }

    @Test("A change whose answer never came says it may have been made, and how to find out", arguments: ["en", "da"])
    func lostAnswers(language: String) async throws {
        let directory = try TemporaryDirectory("unlockit-cli-lost")
        defer { directory.remove() }
        // A server that answers what is read, and reads every change and closes without answering:
        // the change may have been made, and what it answered (a password chosen for a user) is lost.
        let server = try ScriptedHTTPServer { Self.scriptedRead($0) }
        defer { server.stop() }
        let admin = try Self.signedInAdmin(home: "\(directory.path)/home", language: language, server: server.port)
        let csv = "\(directory.path)/staff.csv"
        try "email,name,role,level\nnew@acme.test,New,employee,1\n".write(toFile: csv, atomically: true, encoding: .utf8)

        let t = Self.lost[language]!
        let imported = try await admin.run(["users", "import", csv])
        #expect(imported.status == 7 && imported.stderr.contains(t["import"]!), "\(imported)")
        let added = try await admin.run(["users", "add", "--email", "new@acme.test", "--name", "New"])
        #expect(added.status == 7 && added.stderr.contains(t["added"]!) && added.stderr.contains(t["giveAPassword"]!), "\(added)")
        let reset = try await admin.run(["users", "reset-password", "clerk@acme.test", "--yes"])
        #expect(reset.status == 7 && reset.stderr.contains(t["reset"]!), "\(reset)")
        let room = try await admin.run(["rooms", "add", "Lab", "--type", "office", "--list-only"])
        #expect(room.status == 7 && room.stderr.contains(t["mayHaveBeenDone"]!), "\(room)")
        // A lock's broker password was in the lost answer: the way to a new one is named.
        let lock = try await admin.run(["locks", "add", "lock-lost", "--name", "Door", "--room", "00000000-0000-4000-8000-000000000002"])
        #expect(lock.status == 7 && lock.stderr.contains(t["lockAdded"]!) && lock.stderr.contains(t["newBrokerPassword"]!), "\(lock)")
        let reissued = try await admin.run(["locks", "broker-password", "lock-lost", "--yes"])
        #expect(reissued.status == 7 && reissued.stderr.contains(t["brokerPassword"]!), "\(reissued)")
        // What only reads says what it always said.
        let listed = try await admin.run(["rooms", "list"])
        #expect(listed.status == 7 && listed.stderr.contains(t["unreachable"]!), "\(listed)")
    }

    @Test(
        "A change answered unreadably says it was made and how to recover; output that cannot be written fails the command", arguments: ["en", "da"])
    func unreadableAnswersAndLostOutput(language: String) async throws {
        let directory = try TemporaryDirectory("unlockit-cli-unreadable")
        defer { directory.remove() }
        // Reads are answered as the server would; a password reset too; the other changes with a
        // success whose body is not what the CLI expects (a newer server, a proxy's rewrite).
        let server = try ScriptedHTTPServer { request in
            if let read = Self.scriptedRead(request) { return read }
            if request.hasPrefix("POST /api/v1/users/00000000-0000-4000-8000-000000000001/password ") {
                return ScriptedHTTPServer.ok(json: #"{"initialPassword":"Shown-0nce-password"}"#)
            }
            return ScriptedHTTPServer.ok(json: #"{"surprise":true}"#)
        }
        defer { server.stop() }
        let admin = try Self.signedInAdmin(home: "\(directory.path)/home", language: language, server: server.port)
        let t = Self.unreadable[language]!

        let added = try await admin.run(["users", "add", "--email", "new@acme.test", "--name", "New"])
        #expect(added.status == 1 && added.stderr.contains(t["done"]!), "\(added)")
        #expect(added.stderr.contains("unlockit users reset-password new@acme.test"), "\(added)")
        let lock = try await admin.run(["locks", "add", "lock-odd", "--name", "Door", "--room", "00000000-0000-4000-8000-000000000002"])
        #expect(lock.status == 1 && lock.stderr.contains(t["done"]!) && lock.stderr.contains("unlockit locks broker-password lock-odd"), "\(lock)")
        let reissued = try await admin.run(["locks", "broker-password", "lock-odd", "--yes"])
        #expect(reissued.status == 1 && reissued.stderr.contains(t["done"]!), "\(reissued)")
        #expect(reissued.stderr.contains("unlockit locks broker-password lock-odd"), "\(reissued)")

        // A readable answer whose password cannot be printed: not a success.
        let shown = try await admin.run(["users", "reset-password", "clerk@acme.test", "--yes"])
        #expect(shown.status == 0 && shown.stdout.contains("Shown-0nce-password"), "\(shown)")
        let lost = try await admin.run(["users", "reset-password", "clerk@acme.test", "--yes"], stdoutTo: "/dev/full")
        #expect(lost.status == 1 && lost.stderr.contains(t["outputLost"]!), "\(lost)")
        #expect(lost.stderr.contains("unlockit users reset-password") && !lost.stderr.contains("Shown-0nce-password"), "\(lost)")
    }

    static let unreadable: [String: [String: String]] = [
        "en": ["done": "The server made the change, but its answer could not be read.", "outputLost": "it is lost"],
        "da": ["done": "Serveren foretog ændringen, men dens svar kunne ikke læses.", "outputLost": "det er tabt"],
    ]

    @Test("A proxy's 502 or 504 to a change says it may have been made, to a read that it failed; a refused pairing says so")
    func aProxysGatewayErrorToAChange() async throws {
        let directory = try TemporaryDirectory("unlockit-cli-gateway")
        defer { directory.remove() }
        let server = try ScriptedHTTPServer { request in
            if request.hasPrefix("POST /api/v1/locks/lock-shy/activate ") {
                let problem = #"{"type":"about:blank","title":"The lock refused","status":409,"code":"lock_denied"}"#
                return "HTTP/1.1 409 Conflict\r\nContent-Type: application/problem+json\r\nContent-Length: \(problem.utf8.count)\r\n"
                    + "Connection: close\r\n\r\n\(problem)"
            }
            let status = request.hasPrefix("POST ") ? "504 Gateway Timeout" : "502 Bad Gateway"
            return "HTTP/1.1 \(status)\r\nContent-Type: text/html\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        }
        defer { server.stop() }
        let admin = try Self.signedInAdmin(home: "\(directory.path)/home", language: "en", server: server.port)
        let added = try await admin.run(["rooms", "add", "Lab", "--type", "office", "--list-only"])
        #expect(added.status == 7 && added.stderr.contains("what was asked may have been done"), "\(added)")
        let listed = try await admin.run(["rooms", "list"])
        #expect(listed.status == 7 && listed.stderr.contains("HTTP status 502"), "\(listed)")
        // An activation the lock did not take is said as such, not as a door that refused to open.
        let refused = try await admin.run(["locks", "activate", "lock-shy"], stdin: ["7KQ2-M9XD-4RTA-WZ3C"])
        #expect(refused.status == 1 && refused.stderr.contains("The lock did not accept the pairing of lock-shy."), "\(refused)")
    }

    @Test("A reset refused for a user who signs in with OpenID Connect only says so to the admin", arguments: ["en", "da"])
    func aResetOfAnOIDCOnlyUser(language: String) async throws {
        let directory = try TemporaryDirectory("unlockit-cli-oidc-only")
        defer { directory.remove() }
        let server = try ScriptedHTTPServer { request in
            if request.hasPrefix("POST /api/v1/users/00000000-0000-4000-8000-000000000001/password ") {
                let problem = #"{"type":"about:blank","title":"No password","status":409,"code":"no_password"}"#
                return "HTTP/1.1 409 Conflict\r\nContent-Type: application/problem+json\r\nContent-Length: \(problem.utf8.count)\r\n"
                    + "Connection: close\r\n\r\n\(problem)"
            }
            return Self.scriptedRead(request)
        }
        defer { server.stop() }
        let admin = try Self.signedInAdmin(home: "\(directory.path)/home", language: language, server: server.port)
        let refused = try await admin.run(["users", "reset-password", "clerk@acme.test", "--yes"])
        let (message, hint) =
            language == "en"
            ? ("clerk@acme.test signs in with OpenID Connect only and has no password to reset.", "unlockit users edit clerk@acme.test --disable")
            : (
                "clerk@acme.test logger kun ind med OpenID Connect og har ingen adgangskode at nulstille.",
                "unlockit users edit clerk@acme.test --disable"
            )
        #expect(refused.status == 1 && refused.stderr.contains(message) && refused.stderr.contains(hint), "\(refused)")
        // Not the words meant for the account's own user.
        #expect(!refused.stderr.contains("--id-token"), "\(refused)")
    }

    @Test("unlink-oidc says whether the user was linked to an account at an identity provider", arguments: ["en", "da"])
    func unlinkingAUsersAccounts(language: String) async throws {
        let directory = try TemporaryDirectory("unlockit-cli-unlink")
        defer { directory.remove() }
        let deletes = Mutex(0)
        let server = try ScriptedHTTPServer { request in
            if request.hasPrefix("DELETE /api/v1/users/00000000-0000-4000-8000-000000000001/identities ") {
                // Linked the first time, not the second.
                let count = deletes.withLock { deletes in
                    deletes += 1
                    return deletes == 1 ? 1 : 0
                }
                return ScriptedHTTPServer.ok(json: #"{"unlinked":\#(count)}"#)
            }
            if request.hasPrefix("GET /api/v1/users/00000000-0000-4000-8000-000000000001 ") {
                return ScriptedHTTPServer.ok(json: Self.clerk(oidcIssuers: ["https://id.acme.test", "https://login.example"]))
            }
            return Self.scriptedRead(request)
        }
        defer { server.stop() }
        let admin = try Self.signedInAdmin(home: "\(directory.path)/home", language: language, server: server.port)
        let first = try await admin.run(["users", "unlink-oidc", "clerk@acme.test", "--yes"])
        let second = try await admin.run(["users", "unlink-oidc", "clerk@acme.test", "--yes"])
        let (unlinked, notLinked) =
            language == "en"
            ? (
                "clerk@acme.test is no longer linked to an account at any identity provider",
                "clerk@acme.test was not linked to an account at any identity provider."
            )
            : (
                "clerk@acme.test er ikke længere koblet til en konto hos nogen identitetsudbyder",
                "clerk@acme.test var ikke koblet til en konto hos nogen identitetsudbyder."
            )
        #expect(first.status == 0 && first.stdout.contains(unlinked), "\(first)")
        #expect(second.status == 0 && second.stdout.contains(notLinked), "\(second)")
        // Not without a confirmation: nothing is sent.
        let unconfirmed = try await admin.run(["users", "unlink-oidc", "clerk@acme.test"])
        #expect(unconfirmed.status == 64, "\(unconfirmed)")
        #expect(deletes.withLock { $0 } == 2)
        // `users show` says where the user is linked, for the admin to see before unlinking.
        let shown = try await admin.run(["users", "show", "clerk@acme.test"])
        let label = language == "en" ? "Linked at (OpenID Connect)" : "Koblet hos (OpenID Connect)"
        #expect(shown.status == 0 && shown.stdout.contains(label) && shown.stdout.contains("https://id.acme.test, https://login.example"), "\(shown)")
    }

    @Test("login --password-stdin without --email is refused before anything is sent")
    func passwordStdinNeedsAnEmail() async throws {
        let directory = try TemporaryDirectory("unlockit-cli-email")
        defer { directory.remove() }
        let server = try ScriptedHTTPServer { _ in nil }
        defer { server.stop() }
        let person = Person(home: "\(directory.path)/home", language: "en")
        // The first line is the password: it must not be sent as the email.
        let refused = try await person.run(
            ["login", "--server", "http://127.0.0.1:\(server.port)", "--password-stdin"], stdin: ["my old password", "my new password 1"])
        #expect(refused.status == 64, "\(refused)")
        #expect(refused.stderr.contains("No email address was given.") && refused.stderr.contains("--email"), "\(refused)")
        try await Task.sleep(for: .milliseconds(100))
        #expect(server.accepted == 0)
    }

    /// A scripted server's answer to the reads the CLI makes before a change: the user list (with
    /// clerk@acme.test) and the room Reception; nil for any other request.
    static func scriptedRead(_ request: String) -> String? {
        let clerk = clerk()
        let reception =
            #"{"id":"00000000-0000-4000-8000-000000000002","name":"Reception","description":"","type":"office","bookable":false,"#
            + #""requiredLevel":1,"authorizedUsers":[],"createdAt":"2026-11-25T08:00:00Z","updatedAt":"2026-11-25T08:00:00Z"}"#
        if request.hasPrefix("GET /api/v1/users ") { return ScriptedHTTPServer.ok(json: #"{"items":[\#(clerk)]}"#) }
        if request.hasPrefix("GET /api/v1/rooms/00000000-0000-4000-8000-000000000002 ") { return ScriptedHTTPServer.ok(json: reception) }
        return nil
    }

    /// The user clerk@acme.test as the scripted server answers for it; `oidcIssuers` as one user's
    /// own answer gives them.
    static func clerk(oidcIssuers: [String]? = nil) -> String {
        let issuers = oidcIssuers.map { #","oidcIssuers":[\#($0.map { "\"\($0)\"" }.joined(separator: ","))]"# } ?? ""
        return #"{"id":"00000000-0000-4000-8000-000000000001","email":"clerk@acme.test","name":"Clerk","role":"employee","#
            + #""securityLevel":1,"enabled":true,"mustChangePassword":true,"createdAt":"2026-11-25T08:00:00Z","updatedAt":"2026-11-25T08:00:00Z""#
            + issuers + "}"
    }

    /// An admin whose stored session names the scripted server on `port` (which checks no token).
    static func signedInAdmin(home: String, language: String, server port: Int) throws -> Person {
        let admin = Person(home: home, language: language)
        try FileManager.default.createDirectory(
            atPath: "\(admin.home)/unlockit", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let session =
            #"{"server":"http://127.0.0.1:\#(port)","token":"uit_x","expiresAt":"2099-01-01T00:00:00Z","#
            + #""email":"admin@acme.test","role":"admin"}"#
        #expect(FileManager.default.createFile(atPath: admin.credentialsPath, contents: Data(session.utf8), attributes: [.posixPermissions: 0o600]))
        return admin
    }

    static let lost: [String: [String: String]] = [
        "en": [
            "import": "No answer came to the import: the users may have been created.",
            "added": "No answer came: new@acme.test may have been created.",
            "giveAPassword": "unlockit users reset-password new@acme.test",
            "reset": "No answer came: the password of clerk@acme.test may have been reset.",
            "lockAdded": "No answer came: the lock lock-lost may have been registered.",
            "newBrokerPassword": "unlockit locks broker-password lock-lost",
            "brokerPassword": "No answer came: the broker password of lock-lost may have been changed.",
            "mayHaveBeenDone": "what was asked may have been done", "unreachable": "cannot be reached",
        ],
        "da": [
            "import": "Der kom intet svar på importen: brugerne kan være oprettet.",
            "added": "Der kom intet svar: new@acme.test kan være oprettet.",
            "giveAPassword": "unlockit users reset-password new@acme.test",
            "reset": "Der kom intet svar: adgangskoden for clerk@acme.test kan være nulstillet.",
            "lockAdded": "Der kom intet svar: låsen lock-lost kan være registreret.",
            "newBrokerPassword": "unlockit locks broker-password lock-lost",
            "brokerPassword": "Der kom intet svar: broker-adgangskoden for lock-lost kan være ændret.",
            "mayHaveBeenDone": "det, der blev bedt om, kan være udført", "unreachable": "kan ikke nås",
        ],
    ]

    @Test("--json on every list command, with stable field names", arguments: ["en"])
    func jsonOutput(language: String) async throws {
        try await Site.with() { site in
            let admin = Person(home: "\(site.directory.path)/home", language: language)
            let initial = try await site.server.bootstrap(company: "Json", adminEmail: "admin@json.test")
            try await admin.run(
                ["login", "--server", "http://127.0.0.1:\(site.server.port)", "--email", "admin@json.test", "--password-stdin"],
                stdin: [initial, "the admin's own password"])
            try await admin.run(["rooms", "add", "Hall", "--type", "other", "--list-only"])
            try await admin.run(["locks", "add", "lock-json", "--name", "Hall door", "--room", "Hall"])

            let users = try await admin.run(["users", "list", "--json"])
            let userFields = Set(users.items.first?.keys.map { $0 } ?? [])
            #expect(userFields.isSuperset(of: ["id", "email", "name", "role", "securityLevel", "enabled"]))
            let rooms = try await admin.run(["rooms", "list", "--json"])
            #expect(rooms.items.first?["name"] as? String == "Hall")
            #expect(rooms.items.first?["requiredLevel"] is NSNull)
            #expect(rooms.items.first?.keys.contains("authorizedUsers") == true)
            let locks = try await admin.run(["locks", "list", "--json"])
            #expect(locks.items.first?["id"] as? String == "lock-json")
            #expect(locks.items.first?["state"] as? String == "registered")
            let access = try await admin.run(["access", "--json"])
            #expect(access.items.first?["allowed"] as? Bool == false)
            #expect(access.items.first?["reason"] as? String == "lock_inactive")
            let audit = try await admin.run(["audit", "--json"])
            #expect(audit.items.contains { $0["action"] as? String == "register_lock" })
            let whoami = try await admin.run(["whoami", "--json"])
            #expect((whoami.json["user"] as? [String: any Sendable])?["email"] as? String == "admin@json.test")
            for result in [users, rooms, locks, access, audit, whoami] {
                #expect(result.status == 0)
                #expect(result.stderr.isEmpty, "\(result.stderr)")
            }
        }
    }

    @Test("The credentials file: private, refused when others can read it, removed by logout; expired sessions say so", arguments: ["en", "da"])
    func credentialsFile(language: String) async throws {
        let t = Self.text[language]!
        try await Site.with() { site in
            let server = "http://127.0.0.1:\(site.server.port)"
            let admin = Person(home: "\(site.directory.path)/home", language: language)

            let notSignedIn = try await admin.run(["whoami"])
            #expect(notSignedIn.status == 3)
            #expect(notSignedIn.stderr.contains(t["notSignedIn"]!))
            let unreachable = try await admin.run(
                ["login", "--server", "http://127.0.0.1:1", "--email", "a@b.test", "--password-stdin"], stdin: ["x"])
            #expect(unreachable.status == 7)
            #expect(unreachable.stderr.contains(t["unreachable"]!))
            // Plain http to another machine is refused before a password is asked for or sent.
            let insecure = try await admin.run(
                ["login", "--server", "http://doors.example.com", "--email", "a@b.test", "--password-stdin"], stdin: ["x"])
            #expect(insecure.status == 64, "\(insecure)")
            #expect(insecure.stderr.contains(t["insecure"]!), "\(insecure)")

            let initial = try await site.server.bootstrap(company: "Files", adminEmail: "admin@files.test")
            #expect(
                try await admin.run(
                    ["login", "--server", server, "--email", "admin@files.test", "--password-stdin"], stdin: [initial, "a brand new one!"]
                )
                .status == 0)
            #expect(try await admin.run(["whoami"]).status == 0)

            // Signing in again ends the session it replaces on its server, not only here.
            let replaced = try Self.storedCredentials(admin)
            let again = try await admin.run(
                ["login", "--server", server, "--email", "admin@files.test", "--password-stdin", "--json"], stdin: ["a brand new one!"])
            #expect(again.status == 0, "\(again)")
            #expect(again.json["previousSessionEnded"] as? Bool == true, "\(again)")
            #expect(try await site.api.get("/api/v1/me", token: replaced["token"] as? String).status == 401)
            #expect(try await admin.run(["whoami"]).status == 0)
            // A replaced session whose server cannot be reached is reported; the sign-in still counts.
            var elsewhereSession = try Self.storedCredentials(admin)
            elsewhereSession["server"] = "http://127.0.0.1:1"
            try JSONSerialization.data(withJSONObject: elsewhereSession).write(to: URL(fileURLWithPath: admin.credentialsPath))
            chmod(admin.credentialsPath, 0o600)
            let unended = try await admin.run(
                ["login", "--server", server, "--email", "admin@files.test", "--password-stdin", "--json"], stdin: ["a brand new one!"])
            #expect(unended.status == 0, "\(unended)")
            #expect(unended.json["previousSessionEnded"] as? Bool == false, "\(unended)")
            #expect(unended.stderr.contains(t["previousNotEnded"]!), "\(unended)")
            #expect(try await admin.run(["whoami"]).status == 0)

            // The session's token goes only to the server that issued it: another server, named by
            // --server or UNLOCKIT_SERVER, is refused before anything is sent (a refused connection
            // would be 7). The same server written with a trailing slash is the same server.
            let elsewhere = try await admin.run(["--server", "http://127.0.0.1:1", "whoami"])
            #expect(elsewhere.status == 3, "\(elsewhere)")
            #expect(elsewhere.stderr.contains(t["otherServer"]!), "\(elsewhere)")
            #expect(try await admin.run(["whoami"], environment: ["UNLOCKIT_SERVER": "http://127.0.0.1:1"]).status == 3)
            #expect(try await admin.run(["--server", server + "/", "whoami"]).status == 0)

            // Readable by others: refused with the way to fix it.
            chmod(admin.credentialsPath, 0o644)
            let exposed = try await admin.run(["whoami"])
            #expect(exposed.status == 78)
            #expect(exposed.stderr.contains(t["exposed"]!) && exposed.stderr.contains(t["chmod"]!))
            chmod(admin.credentialsPath, 0o600)
            // A symbolic link in its place is refused, not followed, even to a private file.
            let moved = admin.credentialsPath + ".moved"
            #expect(rename(admin.credentialsPath, moved) == 0 && symlink(moved, admin.credentialsPath) == 0)
            let linked = try await admin.run(["whoami"])
            #expect(linked.status == 78, "\(linked)")
            #expect(linked.stderr.contains(t["notAFile"]!), "\(linked)")
            #expect(unlink(admin.credentialsPath) == 0 && rename(moved, admin.credentialsPath) == 0)
            // Someone else's file (left by `sudo unlockit login`, say) is refused too, and said so
            // (only root can give a file away to test it).
            if getuid() == 0 {
                #expect(chown(admin.credentialsPath, 4242, 4242) == 0)
                let foreign = try await admin.run(["whoami"])
                #expect(foreign.status == 78, "\(foreign)")
                #expect(foreign.stderr.contains(t["notYours"]!), "\(foreign)")
                #expect(chown(admin.credentialsPath, getuid(), getgid()) == 0)
            }
            // A folder someone widened is narrowed again by the next sign-in's save.
            chmod("\(admin.home)/unlockit", 0o755)

            // A session the server no longer accepts (signed out elsewhere) gives the "log in again" message.
            let token = try #require(try Self.storedCredentials(admin)["token"] as? String)
            #expect(try await site.api.post("/api/v1/auth/sign-out", token: token).status == 204)
            let expired = try await admin.run(["whoami"])
            #expect(expired.status == 3)
            #expect(expired.stderr.contains(t["expired"]!))
            #expect(expired.stderr.contains(t["logInAgain"]!))

            // Logout forgets the session; with --json it says so in JSON.
            let loggedOut = try await admin.run(["logout", "--json"])
            #expect(loggedOut.status == 0)
            #expect(loggedOut.json["signedOut"] as? Bool == true, "\(loggedOut)")
            #expect(loggedOut.json["revoked"] as? Bool == true)
            #expect(!FileManager.default.fileExists(atPath: admin.credentialsPath))
            #expect(try await admin.run(["logout", "--json"]).json["signedOut"] as? Bool == false)

            // With the server gone, logout still forgets the session here, and says it lives on there.
            #expect(
                try await admin.run(["login", "--server", server, "--email", "admin@files.test", "--password-stdin"], stdin: ["a brand new one!"])
                    .status == 0)
            let folder = try FileManager.default.attributesOfItem(atPath: "\(admin.home)/unlockit")[.posixPermissions] as? NSNumber
            #expect(folder?.intValue == 0o700)
            await site.server.stop()
            let stranded = try await admin.run(["logout", "--json"])
            #expect(stranded.status == 7, "\(stranded)")
            #expect(stranded.stderr.contains(t["notRevoked"]!), "\(stranded)")
            #expect(stranded.json["signedOut"] as? Bool == true && stranded.json["revoked"] as? Bool == false, "\(stranded)")
            #expect(stranded.json["validUntil"] is String)
            #expect(!FileManager.default.fileExists(atPath: admin.credentialsPath))
        }
    }

    @Test("Rooms named alike: names that differ only in case are one name, whatever the letters; a room is found by either")
    func roomsNamedAlike() async throws {
        try await Site.with() { site in
            let server = "http://127.0.0.1:\(site.server.port)"
            let admin = Person(home: "\(site.directory.path)/home", language: "en")
            let initial = try await site.server.bootstrap(company: "Alike", adminEmail: "admin@alike.test")
            let login = try await admin.run(
                ["login", "--server", server, "--email", "admin@alike.test", "--password-stdin"], stdin: [initial, "a brand new one!"])
            #expect(login.status == 0, "\(login)")
            let added = try await admin.run(["rooms", "add", "Mødelokale", "--type", "meeting", "--level", "1"])
            #expect(added.status == 0, "\(added)")
            // Ø and ø are one letter to a person (SQLite's NOCASE alone would fold ASCII letters only).
            let twin = try await admin.run(["rooms", "add", "MØDELOKALE", "--type", "meeting", "--level", "1"])
            #expect(twin.status == 1, "\(twin)")
            #expect(twin.stderr.contains("A room with that name already exists."), "\(twin)")
            let renamed = try await admin.run(["rooms", "edit", "mødelokale", "--name", "MØDELOKALE"])
            #expect(renamed.status == 0, "\(renamed)")
            let roomID = try #require(try await admin.run(["rooms", "list", "--json"]).items.first?["id"] as? String)
            let removed = try await admin.run(["rooms", "remove", "mødelokale", "--yes"])
            #expect(removed.status == 0, "\(removed)")
            let left = try await admin.run(["rooms", "list", "--json"])
            #expect(left.items.isEmpty, "\(left)")
            // The log outlives the room: its events are still found by its id.
            let history = try await admin.run(["audit", "--room", roomID, "--json"])
            #expect(history.status == 0, "\(history)")
            #expect(history.items.contains { $0["action"] as? String == "delete_room" }, "\(history)")
        }
    }

    @Test("users import: one bad row imports nothing and names its line; --dry-run changes nothing", arguments: ["en", "da"])
    func importUsers(language: String) async throws {
        let t = Self.text[language]!
        try await Site.with() { site in
            let admin = Person(home: "\(site.directory.path)/home", language: language)
            let initial = try await site.server.bootstrap(company: "Import", adminEmail: "admin@import.test")
            try await admin.run(
                ["login", "--server", "http://127.0.0.1:\(site.server.port)", "--email", "admin@import.test", "--password-stdin"],
                stdin: [initial, "the admin's own password"])

            let bad = "\(site.directory.path)/bad.csv"
            try "email,name,role,level\nann@import.test,Ann Berg,employee,2\nnot-an-email,Bo,employee,1\n".write(
                toFile: bad, atomically: true, encoding: .utf8)
            let rejected = try await admin.run(["users", "import", bad])
            #expect(rejected.status == 1)
            #expect(rejected.stderr.contains(t["line3"]!), "\(rejected)")
            #expect(rejected.stderr.contains(t["nothingImported"]!))
            #expect(try await admin.run(["users", "list", "--json"]).items.count == 1)

            let good = "\(site.directory.path)/good.csv"
            try "email,name,role,level,password\nann@import.test,\"Berg, Ann\",employee,2,initial password 1\nbo@import.test,Bo,admin,0,\n".write(
                toFile: good, atomically: true, encoding: .utf8)
            let dryRun = try await admin.run(["users", "import", good, "--dry-run"])
            #expect(dryRun.status == 0, "\(dryRun)")
            #expect(dryRun.stdout.contains(t["dryRun"]!))
            #expect(try await admin.run(["users", "list", "--json"]).items.count == 1)

            let imported = try await admin.run(["users", "import", good, "--json"])
            #expect(imported.status == 0, "\(imported)")
            let created = imported.json["created"] as? [[String: any Sendable]] ?? []
            #expect(created.count == 2)
            // Bo had no password in the file: the server chose one and shows it once.
            #expect(created.contains { ($0["initialPassword"] as? String)?.count == 23 })
            let emails = try await admin.run(["users", "list", "--json"]).items.compactMap { $0["email"] as? String }
            #expect(Set(emails) == ["admin@import.test", "ann@import.test", "bo@import.test"])

            // Importing the same file again is refused as a whole: the emails are taken.
            let again = try await admin.run(["users", "import", good])
            #expect(again.status == 1)
            #expect(try await admin.run(["users", "list", "--json"]).items.count == 3)
        }
    }
}

extension CLIEndToEndTests {
    /// The credentials file's fields as the CLI wrote them.
    static func storedCredentials(_ person: Person) throws -> [String: any Sendable] {
        let data = try Data(contentsOf: URL(fileURLWithPath: person.credentialsPath))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: any Sendable])
    }

    static func waitUntilOnline(_ admin: Person, _ online: Bool) async throws {
        try await Network.waitUntil("lock-cli online=\(online)") {
            try await admin.run(["locks", "show", "lock-cli", "--json"]).json["online"] as? Bool == online
        }
    }
}

extension CLIEndToEndTests.Person.Result: CustomStringConvertible {
    var description: String { "status \(status)\nstdout: \(stdout)\nstderr: \(stderr)" }
}
