import CoreMetrics
import Foundation
import Prometheus
import Synchronization

/// The server's metrics, in Prometheus form at `/metrics`.
///
/// Built on swift-metrics with a Prometheus factory of its own (no process-wide bootstrap), so that
/// each server instance, including those in tests, has its own registry.
public final class ServerMetrics: Sendable {
    public let registry: PrometheusCollectorRegistry
    private let factory: PrometheusMetricsFactory
    /// One counter per listener, method, route pattern and status. Keyed by the four as they are: a
    /// key string interpolated for every request cost more than the count itself.
    private struct RequestKey: Hashable {
        let listener: String
        let method: String
        let route: String
        let status: Int
    }
    private let requestCounters = Mutex<[RequestKey: CoreMetrics.Counter]>([:])
    private let unlockCounters = Mutex<[String: CoreMetrics.Counter]>([:])
    private let requestLatency: CoreMetrics.Timer
    private let unlockLatency: CoreMetrics.Timer
    private let onlineLocks: CoreMetrics.Gauge
    private let malformedMessages: CoreMetrics.Counter
    private let unexpectedMessages: CoreMetrics.Counter
    private let messagesOverBudget: CoreMetrics.Counter
    private let signIns: Mutex<[String: CoreMetrics.Counter]> = Mutex([:])

    public init() {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        let fine: [Duration] = [
            .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
            .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1),
            .seconds(2.5), .seconds(5),
        ]
        factory.defaultDurationHistogramBuckets = fine
        self.registry = registry
        self.factory = factory
        requestLatency = CoreMetrics.Timer(label: "unlockit_http_request_duration_seconds", factory: factory)
        unlockLatency = CoreMetrics.Timer(label: "unlockit_unlock_duration_seconds", factory: factory)
        onlineLocks = CoreMetrics.Gauge(label: "unlockit_locks_online", factory: factory)
        malformedMessages = CoreMetrics.Counter(label: "unlockit_mqtt_malformed_messages_total", factory: factory)
        unexpectedMessages = CoreMetrics.Counter(label: "unlockit_mqtt_unexpected_messages_total", factory: factory)
        messagesOverBudget = CoreMetrics.Counter(label: "unlockit_mqtt_messages_over_budget_total", factory: factory)
    }

    /// One HTTP request to `listener` (`api` or `operations`); `route` is the matched route pattern,
    /// never the raw path (it may hold ids). The listener tells apart the requests no route matched:
    /// probes of the API's address, which faces the world, from a scraper's mistakes.
    func request(listener: String, method: String, route: String, status: Int, duration: Duration) {
        let key = RequestKey(listener: listener, method: method, route: route, status: status)
        let counter = requestCounters.withLock { counters in
            if let counter = counters[key] { return counter }
            let counter = CoreMetrics.Counter(
                label: "unlockit_http_requests_total",
                dimensions: [("listener", listener), ("method", method), ("route", route), ("status", String(status))], factory: factory)
            counters[key] = counter
            return counter
        }
        counter.increment()
        requestLatency.recordNanoseconds(Int64(duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000))
    }

    /// One unlock attempt, by its final outcome (`granted`, `level_too_low`, `lock_timeout`, …).
    func unlock(outcome: String, duration: Duration) {
        unlockCounter(outcome).increment()
        unlockLatency.recordNanoseconds(Int64(duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000))
    }

    /// A lock opened after its unlock had been answered `lock_timeout` (no latency: the client's
    /// answer was already counted).
    func lateGrant() { unlockCounter("granted_late").increment() }

    private func unlockCounter(_ outcome: String) -> CoreMetrics.Counter {
        unlockCounters.withLock { counters in
            if let counter = counters[outcome] { return counter }
            let counter = CoreMetrics.Counter(label: "unlockit_unlocks_total", dimensions: [("outcome", outcome)], factory: factory)
            counters[outcome] = counter
            return counter
        }
    }

    func signIn(outcome: String) {
        let counter = signIns.withLock { counters in
            if let counter = counters[outcome] { return counter }
            let counter = CoreMetrics.Counter(label: "unlockit_sign_ins_total", dimensions: [("outcome", outcome)], factory: factory)
            counters[outcome] = counter
            return counter
        }
        counter.increment()
    }

    func locksOnline(_ count: Int) { onlineLocks.record(count) }
    func malformedMessage() { malformedMessages.increment() }
    func unexpectedMessage() { unexpectedMessages.increment() }
    /// A lock's message dropped unread: its account sent more than ``ServerConfiguration/lockMessagesPerMinute``.
    func messageOverBudget() { messagesOverBudget.increment() }

    /// The Prometheus text exposition of every metric.
    public func exposition() -> [UInt8] { registry.emitToBuffer() }
}
