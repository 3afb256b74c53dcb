import MQTT
import Testing

@Suite struct BackoffTests {
    let backoff = Backoff(initial: .milliseconds(100), maximum: .seconds(5), jitter: 0.5)

    @Test func growsExponentiallyUpToTheMaximum() {
        let ceilings = (0..<10).map { backoff.delay(attempt: $0, random: { 0 }) }
        #expect(ceilings[0] == .milliseconds(100))
        #expect(ceilings[1] == .milliseconds(200))
        #expect(ceilings[2] == .milliseconds(400))
        #expect(ceilings[5] == .milliseconds(3200))
        #expect(ceilings[6] == .seconds(5))
        #expect(ceilings[9] == .seconds(5))
        #expect(backoff.delay(attempt: 1_000_000, random: { 0 }) == .seconds(5))
    }

    @Test func jitterSpreadsDelaysWithinTheConfiguredFraction() {
        #expect(backoff.delay(attempt: 3, random: { 0.999_999 }) > .milliseconds(400))
        #expect(backoff.delay(attempt: 3, random: { 0.999_999 }) < .milliseconds(401))
        let delays = Set((0..<50).map { _ in backoff.delay(attempt: 4) })
        #expect(delays.count > 40)
        #expect(delays.allSatisfy { $0 >= .milliseconds(800) && $0 <= .milliseconds(1600) })
    }

    @Test func brokerAddresses() {
        #expect(BrokerAddress("mqtt://127.0.0.1:1883") == BrokerAddress(host: "127.0.0.1", port: 1883))
        #expect(BrokerAddress("mqtt://broker.local") == BrokerAddress(host: "broker.local", port: 1883))
        #expect(BrokerAddress("http://x:1") == nil)
        #expect(BrokerAddress("mqtt://:1883") == nil)
        #expect(BrokerAddress("mqtt://h:0") == nil)
        #expect(BrokerAddress("mqtt://h:99999") == nil)
        #expect(BrokerAddress("mqtt://h:") == nil)
    }

    @Test("mqtts:// is TLS, on 8883 unless a port is given; mqtt:// is not")
    func tlsBrokerAddresses() {
        #expect(BrokerAddress("mqtts://broker.example.com") == BrokerAddress(host: "broker.example.com", port: 8883, usesTLS: true))
        #expect(BrokerAddress("mqtts://[::1]:9883") == BrokerAddress(host: "::1", port: 9883, usesTLS: true))
        #expect(BrokerAddress("mqtt://broker.example.com")?.usesTLS == false)
        #expect(BrokerAddress("mqtts://") == nil)
        #expect(BrokerAddress("mqttss://h") == nil)
        #expect(BrokerAddress(host: "h", port: 8883, usesTLS: true).description == "mqtts://h:8883")
        #expect(BrokerAddress("mqtts://h")?.tls(caFile: "/ca.pem") == MQTTTLS(caFile: "/ca.pem"))
        #expect(BrokerAddress("mqtt://h")?.tls(caFile: "/ca.pem") == nil)
    }

    @Test("An IPv6 broker address is written in brackets, as in a URL")
    func ipv6BrokerAddresses() {
        #expect(BrokerAddress("mqtt://[::1]:1884") == BrokerAddress(host: "::1", port: 1884))
        #expect(BrokerAddress("mqtt://[fd00::2]") == BrokerAddress(host: "fd00::2", port: 1883))
        #expect(BrokerAddress(host: "::1", port: 1884).description == "mqtt://[::1]:1884")
        #expect(BrokerAddress(host: "broker.local", port: 1883).description == "mqtt://broker.local:1883")
        // Without brackets the last group could be a port.
        #expect(BrokerAddress("mqtt://::1:1883") == nil)
        #expect(BrokerAddress("mqtt://[::1") == nil)
        #expect(BrokerAddress("mqtt://[::1]1883") == nil)
        #expect(BrokerAddress("mqtt://[broker.local]:1883") == nil)
        #expect(BrokerAddress("mqtt://[::1]:0") == nil)
    }
}
