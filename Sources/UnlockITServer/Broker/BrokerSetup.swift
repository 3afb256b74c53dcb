import Foundation
import MQTT

/// Writes a mosquitto configuration for a local UnlockIT site: a loopback listener, and a TLS
/// listener for locks on the network when given a certificate; no anonymous access, TCP_NODELAY,
/// and the dynamic-security plugin with one admin account for the server.
///
/// A listener without TLS is refused on any address but loopback unless asked for
/// (``allowsPlainNetwork``): broker passwords would cross that network in the clear.
///
/// The server's broker password is random and written to a file only its owner can read; it reaches
/// `mosquitto_ctrl` on stdin, never on a command line.
public struct BrokerSetup: Sendable {
    public var directory: String
    public var host: String
    public var port: Int
    public var serverUsername: String
    /// A second listener, with TLS: the one locks on other machines reach.
    public var tls: TLSListener?
    /// A listener without TLS on an address other than loopback, asked for knowingly.
    public var allowsPlainNetwork: Bool
    /// `mosquitto_ctrl`, when not the one on PATH (tests).
    var mosquittoCtrl: String?

    /// A listener that speaks TLS only (1.2 or later), with a certificate and its key in PEM files,
    /// which mosquitto reads as it starts.
    public struct TLSListener: Sendable, Equatable {
        public var host: String
        public var port: Int
        public var certificateFile: String
        public var keyFile: String

        public init(host: String, port: Int, certificateFile: String, keyFile: String) {
            self.host = host
            self.port = port
            self.certificateFile = BrokerSetup.absolute(certificateFile)
            self.keyFile = BrokerSetup.absolute(keyFile)
        }
    }

    public init(
        directory: String, host: String = "127.0.0.1", port: Int, serverUsername: String = "unlockit-server", tls: TLSListener? = nil,
        allowsPlainNetwork: Bool = false
    ) {
        self.directory = Self.absolute(directory)
        self.host = host
        self.port = port
        self.serverUsername = serverUsername
        self.tls = tls
        self.allowsPlainNetwork = allowsPlainNetwork
    }

    /// mosquitto resolves relative paths against its own working directory: they are kept absolute.
    static func absolute(_ path: String) -> String { URL(fileURLWithPath: path).standardizedFileURL.path }

    /// A host name or an IPv4 or IPv6 address as mosquitto's `listener` takes it: 1–253 letters,
    /// digits, dots, hyphens and colons. Nothing that would leave the address out or end the line.
    public static func isValidHost(_ host: String) -> Bool {
        (1...253).contains(host.utf8.count)
            && host.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                    true
                case UInt8(ascii: "."), UInt8(ascii: "-"), UInt8(ascii: ":"): true
                default: false
                }
            }
    }

    public var configPath: String { "\(directory)/mosquitto.conf" }
    public var dynamicSecurityPath: String { "\(directory)/dynamic-security.json" }
    public var passwordPath: String { "\(directory)/server-mqtt-password" }
    public var logPath: String { "\(directory)/mosquitto.log" }

    public static let pluginCandidates = [
        "/usr/lib/x86_64-linux-gnu/mosquitto_dynamic_security.so",
        "/usr/lib/aarch64-linux-gnu/mosquitto_dynamic_security.so",
        "/usr/lib/mosquitto_dynamic_security.so",
        "/usr/local/lib/mosquitto_dynamic_security.so",
    ]

    public enum SetupError: Error, CustomStringConvertible, Equatable {
        case missing(String)
        case failed(String)
        /// One of the pair (the broker's accounts, the server's password for them) without the other.
        case incomplete(present: String, absent: String)
        /// A listener address or a folder that cannot stand in mosquitto's configuration as given.
        case invalid(String)

        public var description: String {
            switch self {
            case .missing(let what): "\(what) was not found; install mosquitto (apt-get install mosquitto)"
            case .failed(let why): "broker setup failed: \(why)"
            case .incomplete(let present, let absent):
                "\(present) is there but \(absent) is not: restore \(absent) from the backup beside it, or move \(present) "
                    + "away to set up a broker anew (the locks' broker accounts are then lost)"
            case .invalid(let why): why
            }
        }
    }

    /// Creates the broker's accounts and the server's password for them if neither exists, and
    /// returns the password. Both existing, they are kept as they are; one without the other (a
    /// backup restored in part) is refused, never replaced: the accounts hold every lock's.
    @discardableResult
    public func write() throws -> String {
        // Both go into the configuration's lines as they are: an empty address would make mosquitto
        // listen on every interface, and a line break would add lines of its own.
        guard Self.isValidHost(host) else {
            throw SetupError.invalid("the listener's address must be a host name or an IP address, not \(host.debugDescription)")
        }
        guard !directory.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw SetupError.invalid("the broker's folder must not contain control characters: \(directory.debugDescription)")
        }
        guard allowsPlainNetwork || !BrokerAddress(host: host, port: port).isPlainOnTheNetwork else {
            throw SetupError.invalid(
                "a listener without TLS on \(host) would carry the locks' broker passwords across the network in the clear: "
                    + "keep it on loopback and give the locks a TLS listener (a certificate and its key), "
                    + "or allow a plain listener on the network knowingly")
        }
        if let tls { try check(tls) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        guard let plugin = Self.pluginCandidates.first(where: { FileManager.default.fileExists(atPath: $0) }) else {
            throw SetupError.missing("mosquitto's dynamic-security plugin")
        }
        let password: String
        switch (FileManager.default.fileExists(atPath: dynamicSecurityPath), FileManager.default.fileExists(atPath: passwordPath)) {
        case (true, true):
            password = try String(contentsOfFile: passwordPath, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            guard !password.isEmpty else { throw SetupError.failed("\(passwordPath) is empty") }
        case (false, false):
            password = (0..<24).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
            // The password first, on the disk before the accounts that take it: a setup that stops
            // half-way never leaves accounts whose password is stored nowhere.
            do {
                try PrivateFile.create(passwordPath, text: password + "\n")
            } catch {
                throw SetupError.failed("cannot write \(passwordPath): \(error.reason)")
            }
            do {
                try initialiseDynamicSecurity(password: password)
            } catch {
                // Back to where it began (neither file), so that running it again works.
                try? FileManager.default.removeItem(atPath: dynamicSecurityPath)
                try? FileManager.default.removeItem(atPath: passwordPath)
                throw error
            }
        case (true, false): throw SetupError.incomplete(present: dynamicSecurityPath, absent: passwordPath)
        case (false, true): throw SetupError.incomplete(present: passwordPath, absent: dynamicSecurityPath)
        }
        let config = """
            # Generated by `unlockit-server broker-setup`. A local UnlockIT site's broker.
            # Run as the user who owns these files (mosquitto started as root would otherwise switch to "mosquitto").
            user \(Self.currentUser)
            per_listener_settings false
            listener \(port) \(host)
            \(tlsListenerLines)allow_anonymous false
            # Without TCP_NODELAY every QoS 1 round trip waits on Nagle and delayed ACK.
            set_tcp_nodelay true
            plugin \(plugin)
            plugin_opt_config_file \(dynamicSecurityPath)
            persistence false
            # A protocol message is at most 4 KiB, and the server's broker commands under 1 KiB: a client
            # (a lock's leaked password) sending more is disconnected before the server has to take it.
            max_packet_size 16384
            max_inflight_messages 0
            max_queued_messages 100000
            log_dest file \(logPath)
            log_type error
            log_type warning
            log_type notice
            connection_messages true

            """
        try config.write(toFile: configPath, atomically: true, encoding: .utf8)
        return password
    }

    /// The TLS listener's lines in the configuration, or none.
    private var tlsListenerLines: String {
        guard let tls else { return "" }
        return """
            listener \(tls.port) \(tls.host)
            certfile \(tls.certificateFile)
            keyfile \(tls.keyFile)
            tls_version tlsv1.2

            """
    }

    /// A TLS listener whose lines would stand in the configuration as given, and whose files
    /// mosquitto can read now (it refuses to start otherwise, saying so only in its own log).
    private func check(_ tls: TLSListener) throws {
        guard Self.isValidHost(tls.host) else {
            throw SetupError.invalid("the TLS listener's address must be a host name or an IP address, not \(tls.host.debugDescription)")
        }
        guard tls.port != port else { throw SetupError.invalid("the TLS listener needs a port of its own, not \(port) again") }
        for file in [tls.certificateFile, tls.keyFile] {
            guard !file.unicodeScalars.contains(where: { $0.properties.generalCategory == .control || $0 == " " }) else {
                throw SetupError.invalid("the TLS files' paths must not contain spaces or control characters: \(file.debugDescription)")
            }
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: file, isDirectory: &isFolder), !isFolder.boolValue,
                FileManager.default.isReadableFile(atPath: file)
            else { throw SetupError.invalid("\(file) is not a readable file") }
        }
    }

    private func initialiseDynamicSecurity(password: String) throws {
        guard let ctrl = mosquittoCtrl ?? Self.findExecutable("mosquitto_ctrl") else { throw SetupError.missing("mosquitto_ctrl") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ctrl)
        process.arguments = ["dynsec", "init", dynamicSecurityPath, serverUsername]
        let input = Pipe()
        process.standardInput = input
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        input.fileHandleForWriting.write(Data("\(password)\n\(password)\n".utf8))
        try input.fileHandleForWriting.close()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw SetupError.failed("mosquitto_ctrl dynsec init exited with \(process.terminationStatus)") }
        try addServerRole()
        guard chmod(dynamicSecurityPath, 0o600) == 0 else { throw SetupError.failed("cannot make \(dynamicSecurityPath) private (mode 0600)") }
    }

    /// Gives the server's account its role (commands to every lock) before the broker first starts,
    /// so the server need not change its own roles on a live broker, which makes mosquitto kick it.
    private func addServerRole() throws {
        let url = URL(fileURLWithPath: dynamicSecurityPath)
        guard var root = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any],
            var clients = root["clients"] as? [[String: Any]], var roles = root["roles"] as? [[String: Any]],
            let index = clients.firstIndex(where: { $0["username"] as? String == serverUsername })
        else { throw SetupError.failed("mosquitto_ctrl wrote a dynamic-security file this version cannot read") }
        let acls = try JSONSerialization.jsonObject(with: JSONEncoder().encode(BrokerAccounts.serverRoleACLs))
        roles.append(["rolename": BrokerAccounts.serverRole, "acls": acls])
        clients[index]["roles"] = ((clients[index]["roles"] as? [[String: Any]]) ?? []) + [["rolename": BrokerAccounts.serverRole]]
        root["clients"] = clients
        root["roles"] = roles
        try JSONSerialization.data(withJSONObject: root, options: [.prettyPrinted, .sortedKeys]).write(to: url)
    }

    static var currentUser: String {
        guard let entry = getpwuid(getuid()), let name = entry.pointee.pw_name else { return "root" }
        return String(cString: name)
    }

    /// Looks for a program on PATH and in the sbin folders, where Debian puts mosquitto.
    public static func findExecutable(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let folders = path.split(separator: ":").map(String.init) + ["/usr/sbin", "/usr/local/sbin", "/sbin", "/usr/bin"]
        return folders.map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}
