import Foundation
import MQTT
import SiteHarness
import Testing
import UnlockITCore

@testable import UnlockITServer

@Suite struct ServerConfigurationTests {
    /// A settings file holding `json`, in a folder of its own: the caller removes the folder.
    static func settingsFile(_ json: String) throws -> (folder: TemporaryDirectory, path: String) {
        let folder = try TemporaryDirectory("unlockit-config")
        let path = "\(folder.path)/server.json"
        try Data(json.utf8).write(to: URL(fileURLWithPath: path))
        return (folder, path)
    }

    @Test(arguments: ["0.5", "3", "5"])
    func anUnlockTimeoutWithinTheLocksChallengeLifeIsTaken(seconds: String) throws {
        let configuration = try ServerConfiguration.load(file: nil, environment: ["UNLOCKIT_UNLOCK_TIMEOUT": seconds])
        #expect(configuration.unlockTimeout == Double(seconds))
    }

    /// A lock forgets its challenge after 5 s: a longer wait would turn a slow unlock into the lock's
    /// `expired` denial; a wait of next to nothing would leave no time to answer a nonce.
    @Test(arguments: ["0.1", "5.5", "60", "three"])
    func anUnlockTimeoutOutsideItIsRefused(seconds: String) {
        #expect(throws: ServerConfiguration.ConfigurationError.self) {
            try ServerConfiguration.load(file: nil, environment: ["UNLOCKIT_UNLOCK_TIMEOUT": seconds])
        }
    }

    @Test("The operations listener is on 127.0.0.1:8081 unless told otherwise, in the file or the environment")
    func theOperationsListenerHasItsOwnAddress() throws {
        let defaults = try ServerConfiguration.load(file: nil, environment: [:])
        #expect(defaults.operationsHost == "127.0.0.1" && defaults.operationsPort == 8081)
        let (folder, file) = try Self.settingsFile(#"{"operationsHost":"10.0.0.5","operationsPort":9100}"#)
        defer { folder.remove() }
        let fromFile = try ServerConfiguration.load(file: file, environment: [:])
        #expect(fromFile.operationsHost == "10.0.0.5" && fromFile.operationsPort == 9100)
        let fromEnvironment = try ServerConfiguration.load(
            file: file, environment: ["UNLOCKIT_OPERATIONS_HOST": "::1", "UNLOCKIT_OPERATIONS_PORT": "0"])
        #expect(fromEnvironment.operationsHost == "::1" && fromEnvironment.operationsPort == 0)
    }

    @Test("The operations listener cannot share the API's address, nor have a port out of range")
    func theOperationsListenerIsRefusedOnTheAPIsAddress() throws {
        #expect {
            try ServerConfiguration.load(file: nil, environment: ["UNLOCKIT_OPERATIONS_PORT": "8080"])
        } throws: { "\($0)".contains("the operations port must differ from the HTTP port") }
        #expect {
            try ServerConfiguration.load(file: nil, environment: ["UNLOCKIT_OPERATIONS_PORT": "65536"])
        } throws: { "\($0)".contains("the operations port must be 0–65535") }
        #expect {
            try ServerConfiguration.load(file: nil, environment: ["UNLOCKIT_OPERATIONS_PORT": "metrics"])
        } throws: { "\($0)".contains("UNLOCKIT_OPERATIONS_PORT must be a whole number") }
        // Nor can it take the API's port on every interface, or the API take its port so.
        for (http, operations) in [("0.0.0.0", "127.0.0.1"), ("127.0.0.1", "::"), ("::", "::"), ("10.0.0.5", "0.0.0.0")] {
            #expect {
                try ServerConfiguration.load(
                    file: nil,
                    environment: ["UNLOCKIT_HTTP_HOST": http, "UNLOCKIT_OPERATIONS_HOST": operations, "UNLOCKIT_OPERATIONS_PORT": "8080"])
            } throws: { "\($0)".contains("the operations port must differ from the HTTP port") }
        }
        // The same port on another address, or both picked by the kernel, is no clash.
        let elsewhere = try ServerConfiguration.load(
            file: nil, environment: ["UNLOCKIT_OPERATIONS_PORT": "8080", "UNLOCKIT_OPERATIONS_HOST": "10.0.0.5"])
        #expect(elsewhere.operationsPort == 8080)
        // IPv4's every interface and an IPv6 address do not meet.
        let apart = try ServerConfiguration.load(
            file: nil, environment: ["UNLOCKIT_HTTP_HOST": "0.0.0.0", "UNLOCKIT_OPERATIONS_PORT": "8080", "UNLOCKIT_OPERATIONS_HOST": "::1"])
        #expect(apart.operationsHost == "::1")
        let picked = try ServerConfiguration.load(file: nil, environment: ["UNLOCKIT_HTTP_PORT": "0", "UNLOCKIT_OPERATIONS_PORT": "0"])
        #expect(picked.httpPort == 0 && picked.operationsPort == 0)
    }

    /// A company's daily budget (``CompanyDailyBudget``) as the configuration names it.
    struct DailyBudget: Sendable, CustomTestStringConvertible {
        let key: String
        let variable: String
        let defaultValue: Int
        let refusal: String
        let value: @Sendable (ServerConfiguration) -> Int
        var testDescription: String { key }
    }

    static let dailyBudgets = [
        DailyBudget(
            key: "takenLockIDsPerDay", variable: "UNLOCKIT_TAKEN_LOCK_IDS_PER_DAY", defaultValue: 20,
            refusal: "taken lock ids per day must be 1–1000000", value: { $0.takenLockIDsPerDay }),
        DailyBudget(
            key: "wrongSetupCodesPerDay", variable: "UNLOCKIT_WRONG_SETUP_CODES_PER_DAY", defaultValue: 50,
            refusal: "wrong setup codes per day must be 1–1000000", value: { $0.wrongSetupCodesPerDay }),
    ]

    @Test("A company's daily budget is read from the file and the environment, and must be 1 to a million", arguments: dailyBudgets)
    func aDailyBudget(_ budget: DailyBudget) throws {
        #expect(budget.value(try ServerConfiguration.load(file: nil, environment: [:])) == budget.defaultValue)
        #expect(budget.value(try ServerConfiguration.load(file: nil, environment: [budget.variable: "5"])) == 5)
        for refused in ["0", "1000001"] {
            #expect {
                try ServerConfiguration.load(file: nil, environment: [budget.variable: refused])
            } throws: { "\($0)".contains(budget.refusal) }
        }
        let (folder, file) = try Self.settingsFile(#"{"\#(budget.key)":7}"#)
        defer { folder.remove() }
        #expect(budget.value(try ServerConfiguration.load(file: file, environment: [:])) == 7)
    }

    @Test("How long a lock not in service keeps its device id is a day unless the file or the environment says otherwise, 1 s to 365 days")
    func theLapseOfAnUnactivatedLock() throws {
        #expect(try ServerConfiguration.load(file: nil, environment: [:]).lockIDLapse == 86400)
        #expect(try ServerConfiguration.load(file: nil, environment: ["UNLOCKIT_LOCK_ID_LAPSE": "3600"]).lockIDLapse == 3600)
        for refused in ["0", "\(365 * 86400 + 1)"] {
            #expect {
                try ServerConfiguration.load(file: nil, environment: ["UNLOCKIT_LOCK_ID_LAPSE": refused])
            } throws: { "\($0)".contains("the lock id lapse must be 1 s to 365 days") }
        }
        let (folder, file) = try Self.settingsFile(#"{"lockIDLapse":600}"#)
        defer { folder.remove() }
        #expect(try ServerConfiguration.load(file: file, environment: [:]).lockIDLapse == 600)
    }

    @Test("A lock may send 600 messages a minute unless the file or the environment says otherwise, 1 to 10,000,000")
    func aLocksMessageBudget() throws {
        #expect(try ServerConfiguration.load(file: nil, environment: [:]).lockMessagesPerMinute == 600)
        #expect(try ServerConfiguration.load(file: nil, environment: ["UNLOCKIT_LOCK_MESSAGES_PER_MINUTE": "60"]).lockMessagesPerMinute == 60)
        for refused in ["0", "10000001"] {
            #expect {
                try ServerConfiguration.load(file: nil, environment: ["UNLOCKIT_LOCK_MESSAGES_PER_MINUTE": refused])
            } throws: { "\($0)".contains("lock messages per minute must be 1–10000000") }
        }
        let (folder, file) = try Self.settingsFile(#"{"lockMessagesPerMinute":1200}"#)
        defer { folder.remove() }
        #expect(try ServerConfiguration.load(file: file, environment: [:]).lockMessagesPerMinute == 1200)
    }

    static let acme = "0b9a3b3e-8d4c-4a0e-9a57-2f1c6a9d0b11"
    static let globex = "7c2e4f1a-5b6d-4e8f-8a9b-0c1d2e3f4a5b"

    @Test("An OIDC issuer's entry is read strictly, in the file and in the environment")
    func aMisspeltIssuerSettingIsRefused() throws {
        // "company" for "companies": refused as what it is, not as companies left out.
        let misspelt = #"[{"issuer":"https://id.acme.test","clientIDs":["cli"],"jwksFile":"/k","company":["\#(Self.acme)"]}]"#
        #expect {
            try ServerConfiguration.load(file: nil, environment: ["UNLOCKIT_OIDC_ISSUERS": misspelt])
        } throws: { "\($0)".contains("unknown OIDC issuer setting \"company\"") }
        let (folder, file) = try Self.settingsFile(#"{"oidcIssuers":\#(misspelt)}"#)
        defer { folder.remove() }
        #expect {
            try ServerConfiguration.load(file: file, environment: [:])
        } throws: { "\($0)".contains("unknown OIDC issuer setting \"company\"") }
        // Spelt right, it is taken.
        let right = misspelt.replacingOccurrences(of: #""company""#, with: #""companies""#)
        let taken = try ServerConfiguration.load(file: nil, environment: ["UNLOCKIT_OIDC_ISSUERS": right])
        #expect(taken.oidcIssuers.first?.companies == [Self.acme])
    }

    @Test("A broker address with a password in it is refused without repeating the password")
    func aBrokerURLWithCredentialsIsNotRepeated() throws {
        #expect {
            try ServerConfiguration.load(file: nil, environment: ["UNLOCKIT_MQTT_URL": "mqtt://unlockit-server:S3cret@127.0.0.1:1883"])
        } throws: { "\($0)".contains("UNLOCKIT_MQTT_PASSWORD_FILE") && !"\($0)".contains("S3cret") }
        #expect {
            try ServerConfiguration.load(file: nil, environment: ["UNLOCKIT_MQTT_URL": "http://127.0.0.1:1883"])
        } throws: { "\($0)".contains("http://127.0.0.1:1883 is not a broker address") }
        let taken = try ServerConfiguration.load(file: nil, environment: ["UNLOCKIT_MQTT_URL": "mqtt://127.0.0.1:1884"])
        #expect(taken.mqttURL == "mqtt://127.0.0.1:1884")
    }

    @Test("An mqtts:// broker is checked against a CA file, which must be readable and is for TLS only; locks may be told another address")
    func tlsBrokerSettings() throws {
        let (folder, file) = try Self.settingsFile(#"{"lockBrokerURL":"mqtts://broker.example.com"}"#)
        defer { folder.remove() }
        let ca = "\(folder.path)/ca.pem"
        try Data("authority".utf8).write(to: URL(fileURLWithPath: ca))

        let plain = try ServerConfiguration.load(file: nil, environment: [:])
        #expect(try plain.brokerTLS() == nil)
        #expect(plain.lockBrokerAddress == plain.mqttURL)

        let tls = try ServerConfiguration.load(
            file: file, environment: ["UNLOCKIT_MQTT_URL": "mqtts://broker.example.com:9883", "UNLOCKIT_MQTT_CA_FILE": ca])
        #expect(try tls.brokerTLS() == MQTTTLS(caFile: ca))
        #expect(tls.lockBrokerAddress == "mqtts://broker.example.com")
        // Without a CA file, the system's authorities.
        #expect(try ServerConfiguration.load(file: nil, environment: ["UNLOCKIT_MQTT_URL": "mqtts://b"]).brokerTLS() == MQTTTLS())

        #expect {
            try ServerConfiguration.load(file: nil, environment: ["UNLOCKIT_MQTT_CA_FILE": ca])
        } throws: { "\($0)".contains("is not mqtts://") }
        #expect {
            try ServerConfiguration.load(file: nil, environment: ["UNLOCKIT_MQTT_URL": "mqtts://b", "UNLOCKIT_MQTT_CA_FILE": ca + ".missing"])
        } throws: { "\($0)".contains("cannot read the broker's CA file") }
        #expect {
            try ServerConfiguration.load(file: nil, environment: ["UNLOCKIT_LOCK_BROKER_URL": "https://broker.example.com"])
        } throws: { "\($0)".contains("https://broker.example.com is not a broker address") }
    }

    @Test("The server warns of a broker that it or the locks reach without TLS across a network, and only then")
    func plainNetworkBrokersAreWarnedOf() throws {
        func warnings(_ environment: [String: String]) throws -> [String] {
            try ServerConfiguration.load(file: nil, environment: environment).plainNetworkWarnings
        }
        #expect(try warnings([:]).isEmpty)
        #expect(try warnings(["UNLOCKIT_MQTT_URL": "mqtt://[::1]:1883", "UNLOCKIT_LOCK_BROKER_URL": "mqtts://broker.example.com"]).isEmpty)
        #expect(try warnings(["UNLOCKIT_MQTT_URL": "mqtts://broker.example.com"]).isEmpty)
        let server = try warnings(["UNLOCKIT_MQTT_URL": "mqtt://broker.example.com:1883", "UNLOCKIT_LOCK_BROKER_URL": "mqtts://broker.example.com"])
        #expect(server.count == 1 && server[0].contains("the server reaches the broker at mqtt://broker.example.com:1883 without TLS"))
        // Told the server's own plain address, locks on the network would send their passwords in the clear.
        let locks = try warnings(["UNLOCKIT_MQTT_URL": "mqtt://10.0.0.2:1883"])
        #expect(locks.count == 2 && locks[1].contains("locks are told to reach the broker at mqtt://10.0.0.2:1883 without TLS"))
    }

    @Test("The broker password file is refused while others can read it, without repeating the password")
    func anExposedBrokerPasswordFileIsRefused() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("unlockit-config-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("server-mqtt-password").path
        #expect(FileManager.default.createFile(atPath: file, contents: Data("S3cret-broker\n".utf8), attributes: [.posixPermissions: 0o644]))
        let configuration = try ServerConfiguration.load(file: nil, environment: ["UNLOCKIT_MQTT_PASSWORD_FILE": file])
        #expect {
            try configuration.resolvedMQTTPassword()
        } throws: { "\($0)".contains("chmod 600 \(file)") && "\($0)".contains("mode 644") && !"\($0)".contains("S3cret") }
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file)
        #expect(try configuration.resolvedMQTTPassword() == "S3cret-broker")
    }

    @Test("An OIDC issuer's keys come over https only, and its algorithms are asymmetric ones the server knows")
    func anIssuersKeysAndAlgorithmsAreChecked() throws {
        func issuer(_ extra: String) -> [String: String] {
            ["UNLOCKIT_OIDC_ISSUERS": #"[{"issuer":"https://id.acme.test","clientIDs":["cli"],"companies":["*"],\#(extra)}]"#]
        }
        #expect {
            try ServerConfiguration.load(file: nil, environment: issuer(#""jwksURL":"http://id.acme.test/jwks""#))
        } throws: { "\($0)".contains("jwksURL must be an https:// address") }
        for algorithms in [#"[]"#, #"["HS256"]"#, #"["RS256","none"]"#, #"["rs256"]"#] {
            #expect(throws: ServerConfiguration.ConfigurationError.self, "\(algorithms)") {
                try ServerConfiguration.load(file: nil, environment: issuer(#""jwksFile":"/k","algorithms":\#(algorithms)"#))
            }
        }
        let taken = try ServerConfiguration.load(
            file: nil, environment: issuer(#""jwksURL":"https://id.acme.test/jwks","algorithms":["RS256","ES256"]"#))
        #expect(taken.oidcIssuers.first?.algorithms == ["RS256", "ES256"])
    }

    @Test("Every OIDC issuer names the companies whose users it signs in, or every company with [\"*\"]: none is not every")
    func everyIssuerNamesItsCompanies() throws {
        func load(companies: String?) throws -> ServerConfiguration {
            let entry = companies.map { #","companies":\#($0)"# } ?? ""
            let issuers = #"[{"issuer":"https://id.acme.test","clientIDs":["cli"],"jwksFile":"/k"\#(entry)}]"#
            return try ServerConfiguration.load(file: nil, environment: ["UNLOCKIT_OIDC_ISSUERS": issuers])
        }
        // One issuer alone is no exception: a company bootstrapped later would be signed in by it too.
        #expect {
            try load(companies: nil)
        } throws: { "\($0)".contains("needs companies") && "\($0)".contains(#"["*"]"#) }
        for bad in [#"[]"#, #"["*","\#(Self.acme)"]"#, #"["acme"]"#, #"["all"]"#] {
            #expect("\(bad)") {
                try load(companies: bad)
            } throws: { "\($0)".contains("companies must be one or more company ids, or") }
        }
        #expect(try load(companies: #"["*"]"#).oidcIssuers.first?.signedInCompanies == nil)
        let acme = try #require(CompanyID(Self.acme))
        #expect(try load(companies: #"["\#(Self.acme)"]"#).oidcIssuers.first?.signedInCompanies == [acme])
        // Made in code without companies (the check bypassed), an issuer signs in no company.
        #expect(ServerConfiguration.OIDCIssuer(issuer: "https://id.acme.test", clientIDs: ["cli"]).signedInCompanies == [])
    }

    @Test("An OIDC issuer configured twice is refused: one entry would silently replace the other")
    func anIssuerTwiceIsRefused() {
        let twice =
            #"[{"issuer":"https://accounts.example.test","clientIDs":["a"],"jwksFile":"/k","companies":["\#(Self.acme)"]},"#
            + #"{"issuer":"https://accounts.example.test","clientIDs":["b"],"jwksFile":"/k","companies":["\#(Self.globex)"]}]"#
        #expect {
            try ServerConfiguration.load(file: nil, environment: ["UNLOCKIT_OIDC_ISSUERS": twice])
        } throws: { "\($0)".contains("https://accounts.example.test is configured twice") }
    }
}
