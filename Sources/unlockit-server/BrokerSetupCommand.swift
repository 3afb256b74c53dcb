import ArgumentParser
import Foundation
import UnlockITServer

struct BrokerSetupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "broker-setup",
        abstract: "Write a mosquitto configuration for a local site: loopback listener, dynamic security, TCP_NODELAY.",
        discussion: """
            Creates DIR/mosquitto.conf, DIR/dynamic-security.json and DIR/server-mqtt-password (mode 0600). \
            Start the broker with `mosquitto -c DIR/mosquitto.conf` and give the server \
            UNLOCKIT_MQTT_PASSWORD_FILE=DIR/server-mqtt-password.
            """)

    static let rootWarning =
        "warning: set up as root, so mosquitto started with this configuration keeps root's privileges; "
        + "run broker-setup as the user that will run mosquitto and the server"

    @Option(help: "The folder for the broker's files.")
    var dir: String

    @Option(help: "The TCP port the broker listens on.")
    var port: Int = 1883

    @Option(help: "The address the broker listens on.")
    var host: String = "127.0.0.1"

    func validate() throws {
        guard (1...65535).contains(port) else { throw ValidationError("--port must be 1–65535.") }
        guard BrokerSetup.isValidHost(host) else {
            throw ValidationError("--host must be a host name or an IP address (letters, digits, '.', '-', ':').")
        }
    }

    func run() throws {
        let setup = BrokerSetup(directory: dir, host: host, port: port)
        try setup.write()
        // mosquitto drops its privileges only for a `user` other than root, and the files are the
        // user's who ran this: a broker set up by root runs as root, listening to the network.
        if getuid() == 0 {
            FileHandle.standardError.write(Data((Self.rootWarning + "\n").utf8))
        }
        print("mosquitto configuration: \(setup.configPath)")
        print("server broker password file: \(setup.passwordPath)")
    }
}
