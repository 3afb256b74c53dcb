import Foundation
import LockProtocol
import Logging
import SiteHarness
import Synchronization
import Testing

@testable import UnlockITServer

@Suite struct BrokerSetupTests {
    @Test("broker-setup gives the server's account its role before the broker first starts")
    func serverRoleWritten() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let setup = BrokerSetup(directory: folder.path + "/broker", port: 1883)
        let password = try setup.write()
        #expect(password.count == 48)

        let data = try Data(contentsOf: URL(fileURLWithPath: setup.dynamicSecurityPath))
        let root = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let clients = try #require(root["clients"] as? [[String: Any]])
        let server = try #require(clients.first { $0["username"] as? String == "unlockit-server" })
        let serverRoles = (server["roles"] as? [[String: Any]] ?? []).compactMap { $0["rolename"] as? String }
        #expect(Set(serverRoles) == ["admin", BrokerAccounts.serverRole])

        let roles = try #require(root["roles"] as? [[String: Any]])
        let role = try #require(roles.first { $0["rolename"] as? String == BrokerAccounts.serverRole })
        let acls = try #require(role["acls"] as? [[String: Any]])
        #expect(acls.count == 2)
        #expect(acls.allSatisfy { $0["acltype"] as? String == "publishClientSend" && $0["allow"] as? Bool == true })
        #expect(Set(acls.compactMap { $0["topic"] as? String }) == [Topics.allCommands, Topics.allStatuses])

        // Secrets stay private, and a second run keeps the password and the broker's accounts.
        let attributes = try FileManager.default.attributesOfItem(atPath: setup.dynamicSecurityPath)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        #expect(try setup.write() == password)
        #expect(try Data(contentsOf: URL(fileURLWithPath: setup.dynamicSecurityPath)) == data)

        // A backup restored without the password: refused, and the accounts are left as they are.
        let passwordFile = try Data(contentsOf: URL(fileURLWithPath: setup.passwordPath))
        try FileManager.default.removeItem(atPath: setup.passwordPath)
        #expect(throws: BrokerSetup.SetupError.incomplete(present: setup.dynamicSecurityPath, absent: setup.passwordPath)) { try setup.write() }
        #expect(try Data(contentsOf: URL(fileURLWithPath: setup.dynamicSecurityPath)) == data)
        #expect(!FileManager.default.fileExists(atPath: setup.passwordPath))
        // Restored, it is used again; the accounts without the password are refused the same way.
        try passwordFile.write(to: URL(fileURLWithPath: setup.passwordPath))
        #expect(try setup.write() == password)
        try FileManager.default.removeItem(atPath: setup.dynamicSecurityPath)
        #expect(throws: BrokerSetup.SetupError.incomplete(present: setup.passwordPath, absent: setup.dynamicSecurityPath)) { try setup.write() }
        #expect(try Data(contentsOf: URL(fileURLWithPath: setup.passwordPath)) == passwordFile)
    }

    @Test("broker-setup refuses a listener address or folder that would not stand in the configuration as given")
    func addressesAndFoldersAreChecked() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        // Empty, mosquitto would listen on every interface; a line break would add a line of its own.
        for host in ["", " ", "127.0.0.1\nallow_anonymous true", "127.0.0.1 0.0.0.0", "host#comment"] {
            let setup = BrokerSetup(directory: folder.path + "/broker", host: host, port: 1883)
            #expect(throws: BrokerSetup.SetupError.self, "\(host.debugDescription)") { try setup.write() }
            #expect(!BrokerSetup.isValidHost(host))
        }
        let strayLine = BrokerSetup(directory: folder.path + "/broker\nallow_anonymous true", port: 1883)
        #expect(throws: BrokerSetup.SetupError.self) { try strayLine.write() }
        // Nothing was written.
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
        for host in ["127.0.0.1", "::1", "broker.example.com", "fe80::1"] { #expect(BrokerSetup.isValidHost(host), "\(host)") }

        let setup = BrokerSetup(directory: folder.path + "/broker", host: "::1", port: 1883)
        try setup.write()
        let listeners = try String(contentsOfFile: setup.configPath, encoding: .utf8).split(separator: "\n").filter { $0.hasPrefix("listener") }
        #expect(listeners == ["listener 1883 ::1"])
    }

    @Test("broker-setup refuses a plain listener off loopback unless allowed knowingly")
    func plainListenerStaysOnLoopback() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        for host in ["0.0.0.0", "192.168.1.10", "broker.example.com", "::", "127.0.0.1.example.com", "127.0.0.256"] {

            let setup = BrokerSetup(directory: folder.path + "/broker", host: host, port: 1883)
            #expect(throws: BrokerSetup.SetupError.self, "\(host)") { try setup.write() }
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)

        let plain = BrokerSetup(directory: folder.path + "/broker", host: "0.0.0.0", port: 1883, allowsPlainNetwork: true)
        try plain.write()
        let listeners = try String(contentsOfFile: plain.configPath, encoding: .utf8).split(separator: "\n").filter { $0.hasPrefix("listener") }
        #expect(listeners == ["listener 1883 0.0.0.0"])
    }

    @Test("broker-setup's TLS listener gets lines of its own, with its files' absolute paths, which must be readable")
    func tlsListenerLines() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let listener = BrokerSetup.TLSListener(
            host: "0.0.0.0", port: 8883, certificateFile: folder.path + "/pki/../broker.pem", keyFile: folder.path + "/broker.key")
        #expect(listener.certificateFile == folder.path + "/broker.pem")
        let setup = BrokerSetup(directory: folder.path + "/broker", port: 1883, tls: listener)
        // Neither file is there yet: mosquitto would not start.
        #expect(throws: BrokerSetup.SetupError.self) { try setup.write() }
        #expect(!FileManager.default.fileExists(atPath: folder.path + "/broker"))
        try "certificate".write(toFile: listener.certificateFile, atomically: true, encoding: .utf8)
        #expect(throws: BrokerSetup.SetupError.self) { try setup.write() }
        try "key".write(toFile: listener.keyFile, atomically: true, encoding: .utf8)
        var samePort = setup
        samePort.tls?.port = 1883
        #expect(throws: BrokerSetup.SetupError.self) { try samePort.write() }

        try setup.write()
        let lines = try String(contentsOfFile: setup.configPath, encoding: .utf8).split(separator: "\n")
        let start = try #require(lines.firstIndex(of: "listener 8883 0.0.0.0"))
        #expect(lines.filter { $0.hasPrefix("listener") } == ["listener 1883 127.0.0.1", "listener 8883 0.0.0.0"])
        #expect(
            Array(lines[start...].prefix(4))
                == ["listener 8883 0.0.0.0", "certfile \(folder.path)/broker.pem", "keyfile \(folder.path)/broker.key", "tls_version tlsv1.2"])
    }

    @Test("broker-setup refuses the TLS listener's port or address without its certificate, and a certificate without its key")
    func tlsOptionsGoTogether() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let cases: [([String], String)] = [
            (["--tls-port", "8883"], "--tls-port and --tls-host are for the TLS listener"),
            (["--tls-host", "0.0.0.0"], "--tls-port and --tls-host are for the TLS listener"),
            (["--tls-cert", folder.path + "/c.pem"], "--tls-cert and --tls-key go together"),
            (["--host", "0.0.0.0"], "would carry the locks' broker passwords across the network in the clear"),
        ]
        for (arguments, says) in cases {
            let setup = try ChildProcess(
                try Binaries.path("unlockit-server"), ["broker-setup", "--dir", folder.path + "/broker"] + arguments, name: "broker-setup")
            #expect(try await setup.waitForExit() != 0)
            #expect(setup.output.joined(separator: "\n").contains(says), "\(arguments): \(setup.output)")
        }
        #expect(!FileManager.default.fileExists(atPath: folder.path + "/broker"))
    }

    @Test("broker-setup run as root warns that mosquitto would keep root's privileges, and only then")
    func settingUpAsRootWarns() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let setup = try ChildProcess(
            try Binaries.path("unlockit-server"), ["broker-setup", "--dir", folder.path + "/broker", "--port", "1883"], name: "broker-setup")
        #expect(try await setup.waitForExit() == 0)
        let warned = setup.output.contains { $0.contains("keeps root's privileges") }
        #expect(warned == (getuid() == 0), "\(setup.output)")
    }

    @Test("A broker-setup that fails half-way leaves neither file, and running it again works")
    func aFailedSetupLeavesNothing() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        // A mosquitto_ctrl that writes a file this version cannot read: the role cannot be added.
        let fake = folder.path + "/mosquitto_ctrl"
        try "#!/bin/sh\ncat >/dev/null\necho '{}' > \"$3\"\n".write(toFile: fake, atomically: true, encoding: .utf8)
        chmod(fake, 0o755)
        var setup = BrokerSetup(directory: folder.path + "/broker", port: 1883)
        setup.mosquittoCtrl = fake
        #expect(throws: BrokerSetup.SetupError.self) { try setup.write() }
        #expect(!FileManager.default.fileExists(atPath: setup.dynamicSecurityPath))
        #expect(!FileManager.default.fileExists(atPath: setup.passwordPath))

        setup.mosquittoCtrl = nil
        let password = try setup.write()
        #expect(try String(contentsOfFile: setup.passwordPath, encoding: .utf8) == password + "\n")
        let attributes = try FileManager.default.attributesOfItem(atPath: setup.passwordPath)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
    }

    @Test("The server's broker role is tried again while its connection lasts, and no longer")
    func theServersRoleIsTriedAgain() async throws {
        let attempts = Mutex(0)
        let ready = await BrokerLink.setUp(
            {
                // The plugin does not answer twice (a broker busy with thousands of reconnecting locks).
                let attempt = attempts.withLock { count in
                    count += 1
                    return count
                }
                if attempt < 3 { throw BrokerAccounts.AccountError.timedOut }
            }, while: { true }, logger: Logger(label: "test"), firstWait: .milliseconds(10))
        #expect(ready && attempts.withLock { $0 } == 3)

        let tries = Mutex(0)
        let gone = await BrokerLink.setUp(
            {
                tries.withLock { $0 += 1 }
                throw BrokerAccounts.AccountError.timedOut
            }, while: { tries.withLock { $0 } < 2 }, logger: Logger(label: "test"), firstWait: .milliseconds(10))
        #expect(!gone && tries.withLock { $0 } == 2)
    }
}
