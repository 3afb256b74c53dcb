import Foundation
import SiteHarness

/// The CPU time each process of the site used during a run, per unlock it served: where the two
/// cores go when everything shares them.
struct CPUSplit: Codable {
    var serverMicroseconds: Double
    var brokerMicroseconds: Double
    var locksMicroseconds: Double
    /// This process: the load generator (nothing else in it runs during an unlock run).
    var loadGeneratorMicroseconds: Double

    /// The CPU seconds each process has used so far.
    struct Reading {
        let server: Double
        let broker: Double
        let locks: Double
        let generator: Double

        init(_ site: BenchSite) {
            func cpu(_ pid: Int32?) -> Double { pid.flatMap(ProcessStats.cpuSeconds) ?? 0 }
            server = cpu(site.server.process.pid)
            broker = cpu(site.broker.pid)
            locks = site.fleets.reduce(0) { $0 + cpu($1.pid) }
            generator = cpu(getpid())
        }
    }

    init(from start: Reading, to end: Reading, unlocks: Int) {
        func perUnlock(_ seconds: Double) -> Double { seconds * 1e6 / Double(max(unlocks, 1)) }
        serverMicroseconds = perUnlock(end.server - start.server)
        brokerMicroseconds = perUnlock(end.broker - start.broker)
        locksMicroseconds = perUnlock(end.locks - start.locks)
        loadGeneratorMicroseconds = perUnlock(end.generator - start.generator)
    }
}
