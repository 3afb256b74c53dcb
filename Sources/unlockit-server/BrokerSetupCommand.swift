import ArgumentParser
import Foundation
import UnlockITServer

struct BrokerSetupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "broker-setup",
        abstract: "Write a mosquitto configuration for a site: loopback listener, TLS listener for locks, dynamic security, TCP_NODELAY.",
        discussion: """
            Creates DIR/mosquitto.conf, DIR/dynamic-security.json and DIR/server-mqtt-password (mode 0600). \
            Start the broker with `mosquitto -c DIR/mosquitto.conf` and give the server \
            UNLOCKIT_MQTT_PASSWORD_FILE=DIR/server-mqtt-password. Locks on other machines reach the broker \
            over TLS: give --tls-cert and --tls-key, and the locks mqtts://NAME:PORT with the authority \
            that signed the certificate.
            """)

    static let rootWarning =
        "warning: set up as root, so mosquitto started with this configuration keeps root's privileges; "
        + "run broker-setup as the user that will run mosquitto and the server"

    @Option(help: "The folder for the broker's files.")
    var dir: String

    @Option(help: "The TCP port the broker listens on.")
    var port: Int = 1883

    @Option(help: "The address the broker listens on without TLS: loopback, unless --allow-plain-network.")
    var host: String = "127.0.0.1"

    @Option(help: "A PEM certificate (with its chain) for a TLS listener, the one locks on other machines reach.")
    var tlsCert: String?

    @Option(help: "The PEM private key of --tls-cert; keep it readable by the broker's user only.")
    var tlsKey: String?

    @Option(help: "The TLS listener's port (default: 8883).")
    var tlsPort: Int?

    @Option(help: "The address the TLS listener listens on (default: 0.0.0.0).")
    var tlsHost: String?

    @Flag(help: "Allow --host on a network address without TLS: broker passwords would cross it in the clear.")
    var allowPlainNetwork = false

    func validate() throws {
        guard (1...65535).contains(port), (1...65535).contains(tlsPort ?? 8883) else {
            throw ValidationError("--port and --tls-port must be 1–65535.")
        }
        guard BrokerSetup.isValidHost(host), BrokerSetup.isValidHost(tlsHost ?? "0.0.0.0") else {
            throw ValidationError("--host and --tls-host must be a host name or an IP address (letters, digits, '.', '-', ':').")
        }
        guard (tlsCert == nil) == (tlsKey == nil) else { throw ValidationError("--tls-cert and --tls-key go together.") }
        guard tlsCert != nil || (tlsPort == nil && tlsHost == nil) else {
            throw ValidationError("--tls-port and --tls-host are for the TLS listener: give --tls-cert and --tls-key too.")
        }
    }

    func run() throws {
        var tls: BrokerSetup.TLSListener?
        if let tlsCert, let tlsKey {
            tls = BrokerSetup.TLSListener(host: tlsHost ?? "0.0.0.0", port: tlsPort ?? 8883, certificateFile: tlsCert, keyFile: tlsKey)
        }
        let setup = BrokerSetup(directory: dir, host: host, port: port, tls: tls, allowsPlainNetwork: allowPlainNetwork)
        try setup.write()
        // mosquitto drops its privileges only for a `user` other than root, and the files are the
        // user's who ran this: a broker set up by root runs as root, listening to the network.
        if getuid() == 0 {
            FileHandle.standardError.write(Data((Self.rootWarning + "\n").utf8))
        }
        print("mosquitto configuration: \(setup.configPath)")
        print("server broker password file: \(setup.passwordPath)")
        if let tls { print("TLS listener for locks: \(tls.host) port \(tls.port)") }
    }
}
