import ArgumentParser
import Foundation
import MQTT
import SiteHarness
import UnixSignals
import UnlockITCore

@main
struct UnlockITBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unlockit-bench",
        abstract: "Measure UnlockIT's unlock latency and throughput against the raw MQTT floor, on one host.",
        discussion: """
            Starts mosquitto, the server on a fresh SQLite file and a fleet of simulated locks in one process; \
            registers and activates every lock; measures the MQTT floor and unlocks at concurrency 1, 16 and 64, \
            with and without a sign-in load, and the highest rate sustained with zero errors. Prints a table and \
            writes result.json and latency.svg. Build with `swift build -c release`; scripts/bench does.
            """)

    @Option(help: "How many simulated locks.") var locks = 1000
    @Option(help: "Seconds of each closed-loop unlock run.") var runSeconds = 15.0
    @Option(help: "Seconds of the sustained-rate run.") var sustainSeconds = 60.0
    @Option(help: "Open-loop rates to try (unlocks/s), lowest first; the search stops at the first that fails.")
    var rates = "1000,2000,3000,4000,5000,6000,7000,8000,9000,10000,12000,14000"
    @Option(help: "Seconds of each rate trial before the sustained run.") var trialSeconds = 8.0
    @Option(help: "Sign-ins per second for the interference run.") var signInsPerSecond = 20.0
    @Option(help: "Where to write result.json and latency.svg.") var output = ".state/bench"
    @Flag(help: "A quick check that everything works: few locks, seconds-long runs, no rate search.") var smoke = false
    @Flag(help: "The locks reach the broker over TLS, as locks on a network do; the server stays on its loopback listener.")
    var lockTLS = false
    @Flag(help: "Set the site up, print how to reach it, and wait (for profiling) instead of measuring.") var hold = false

    func run() async throws {
        let locks = smoke ? 20 : self.locks
        let runDuration = Duration.milliseconds(Int64((smoke ? 1 : runSeconds) * 1000))
        try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
        let work = try TemporaryDirectory("unlockit-bench")
        defer { work.remove() }
        // Interrupted (Ctrl-C, SIGTERM): end mosquitto, the server and the fleet, and leave no files.
        let interruption = Task.detached {
            for await signal in await UnixSignalsSequence(trapping: .sigint, .sigterm) {
                FileHandle.standardError.write(Data("\ninterrupted: stopping everything the benchmark started\n".utf8))
                ChildProcess.terminateAll()
                work.remove()
                Foundation.exit(signal == .sigint ? 128 + SIGINT : 128 + SIGTERM)
            }
        }
        defer { interruption.cancel() }

        let site = try await BenchSite.start(
            locks: locks, employees: smoke ? 2 : 16, signInUsers: smoke ? 1 : 8, directory: work.path, openTime: 0.2, lockTLS: lockTLS)
        do {
            if hold {
                let probe = try await StoreProbe().run(directory: work.path, iterations: 2000)
                FileHandle.standardError.write(Data("store \(probe)\n".utf8))
                let lockSamples = try await LockProbe(host: "127.0.0.1", port: site.broker.port, username: "bench", password: "bench floor password")
                    .run(locks: site.locks, count: 2000)
                let floor = MQTTFloor(host: "127.0.0.1", port: site.broker.port, username: "bench", password: "bench floor password")
                let floorLink = try await floor.connect()
                let floorSamples = try await floorLink.latency(roundTrips: 2000)
                await floorLink.close()
                FileHandle.standardError.write(
                    Data("lock p50 \(lockSamples.p50.milliseconds) ms; floor p50 \(floorSamples.p50.milliseconds) ms\n".utf8))
                print(
                    "server http://127.0.0.1:\(site.server.port)  operations http://127.0.0.1:\(site.server.operationsPort)"
                        + "  pid \(site.server.process.pid)  fleet pids \(site.fleets.map(\.pid))")
                print("employee token \(site.employees[0])")
                print("locks \(site.locks.prefix(3).joined(separator: " ")) …")
                fflush(nil)
                while true { try await Task.sleep(for: .seconds(3600)) }
            }
            let report = try await measure(site, locks: locks, runDuration: runDuration)
            await site.stop()
            try write(report)
            // Errors where there must be none fail the run (and the smoke run in scripts/test). A rate
            // trial may fail: that is how the search finds the highest sustained rate.
            // (Every closed-loop run's openings are checked against its grants as it ends.)
            let closedLoopErrors = (report.unlocks + [report.signInLoad, report.paced].compactMap { $0 }).reduce(0) { $0 + $1.errors }
            let openLoop = report.rateSearch + report.failedHolds + [report.sustained].compactMap { $0 }
            let doubleOpenings = openLoop.reduce(0) { $0 + $1.doubleOpenings }
            let missingOpenings = openLoop.reduce(0) { $0 + $1.missingOpenings }
            let smokeErrors = smoke ? report.sustained?.errors ?? 1 : 0
            if closedLoopErrors > 0 || doubleOpenings > 0 || missingOpenings > 0 || smokeErrors > 0 {
                FileHandle.standardError.write(
                    Data(
                        ("FAILED: \(closedLoopErrors) errors where none may be, \(doubleOpenings) double openings, "
                            + "\(missingOpenings) grants without an opening, \(smokeErrors) smoke errors\n").utf8))
                throw ExitCode.failure
            }
        } catch {
            await site.stop()
            throw error
        }
    }

    func measure(_ site: BenchSite, locks: Int, runDuration: Duration) async throws -> Report {
        guard let residentMiB = ProcessStats.residentMiB(pid: site.server.process.pid) else {
            throw HarnessError("the server's resident memory could not be read from /proc")
        }

        say("measuring the MQTT floor's pairs per second")
        let floor = MQTTFloor(host: "127.0.0.1", port: site.broker.port, username: "bench", password: "bench floor password")
        let floorLink = try await floor.connect()
        let floorPairsPerSecond = try await floorLink.pairsPerSecond(for: smoke ? .seconds(1) : .seconds(5), concurrency: 64)
        say("measuring a lock's own answer time (challenge → nonce) and the store's")
        let lockSamples = try await LockProbe(host: "127.0.0.1", port: site.broker.port, username: "bench", password: "bench floor password")
            .run(locks: site.locks, count: smoke ? 100 : 2000)
        let storeResult = try await StoreProbe().run(directory: site.directory, iterations: smoke ? 200 : 2000)

        let load = UnlockLoad(site: site)
        say("warming up")
        _ = await load.closedLoop(concurrency: 8, duration: smoke ? .milliseconds(300) : .seconds(3))

        // The latency ratio compares the floor's round trip with the unlock at concurrency 1, so the two
        // are measured in alternating rounds: both see the same minutes of a shared machine, whose speed
        // drifts more between minutes than the ratio's margin.
        say("unlocking at concurrency 1, in rounds alternating with the floor's round trips")
        let rounds = 5
        var floorSamples = Samples()
        let single = try await checkingOpenings(site) {
            var single = UnlockLoad.Run()
            for _ in 0..<rounds {
                floorSamples.add(try await floorLink.latency(roundTrips: (smoke ? 200 : 3000) / rounds))
                let run = await load.closedLoop(concurrency: 1, duration: runDuration / rounds)
                single.merge(run)
                single.seconds += run.seconds
            }
            return single
        }
        await floorLink.close()
        let floorResult = MQTTFloor.Result(
            roundTripP50Ms: floorSamples.p50.milliseconds, roundTripP99Ms: floorSamples.p99.milliseconds, pairsPerSecond: floorPairsPerSecond)
        var unlocks = [Report.Latency(concurrency: 1, single)]
        var plotted = [("unlock, concurrency 1", single.samples)]
        var cpuAt64: CPUSplit?
        for concurrency in [16, 64] {
            say("unlocking at concurrency \(concurrency)")
            let run = try await checkingOpenings(site) {
                let cpuBefore = CPUSplit.Reading(site)
                let run = await load.closedLoop(concurrency: concurrency, duration: runDuration)
                if concurrency == 64 { cpuAt64 = CPUSplit(from: cpuBefore, to: CPUSplit.Reading(site), unlocks: run.samples.count) }
                return run
            }
            unlocks.append(Report.Latency(concurrency: concurrency, run))
            plotted.append(("unlock, concurrency \(concurrency)", run.samples))
        }
        // Right after the unlocks at 64, in the same minutes: the broker alone carrying an unlock's
        // messages (two exchanges per operation) 64 at a time, at the floor's QoS and the protocol's.
        var floorAt64: [MQTTFloor.Exchanges] = []
        for qos in [QoS.atLeastOnce, .atMostOnce] {
            say("the MQTT floor at concurrency 64, two round trips per operation, QoS \(qos.rawValue)")
            var variant = floor
            variant.qos = qos
            let link = try await variant.connect()
            let cpuBefore = CPUSplit.Reading(site)
            var (summary, samples) = try await link.exchanges(roundTrips: 2, concurrency: 64, for: smoke ? .seconds(1) : .seconds(5))
            summary.cpu = CPUSplit(from: cpuBefore, to: CPUSplit.Reading(site), unlocks: summary.operations)
            await link.close()
            floorAt64.append(summary)
            if qos == .atMostOnce { plotted.append(("floor: 2 trips, 64 at once, QoS 0", samples)) }
        }

        say("unlocking at concurrency 16 while \(Int(signInsPerSecond)) sign-ins per second are offered")
        var signIns = UnlockLoad.SignIns()
        let interfered = try await checkingOpenings(site) {
            async let signInRun = load.signInLoad(perSecond: signInsPerSecond, duration: runDuration)
            let interfered = await load.closedLoop(concurrency: 16, duration: runDuration)
            signIns = await signInRun
            return interfered
        }
        guard signIns.failed == 0 else { throw HarnessError("\(signIns.failed) sign-ins failed during the sign-in load") }
        // The server signs in what bcrypt can take and turns the rest away at once: the load is
        // real only if it kept bcrypt busy, some sign-ins through.
        guard signIns.succeeded > 0 else { throw HarnessError("no sign-in succeeded during the sign-in load") }
        try await Task.sleep(for: .seconds(smoke ? 0.2 : 3))  // let the queued hashes drain

        var trials: [Report.Sustained] = []
        var failedHolds: [Report.Sustained] = []
        var sustained: Report.Sustained?
        var paced: Report.Latency?
        if !smoke {
            var passed: [Double] = []
            for rate in rates.split(separator: ",").compactMap({ Double($0) }) {
                say("trying \(Int(rate)) unlocks/s for \(Int(trialSeconds)) s")
                let trial = try await sustain(site, load, rate: rate, seconds: trialSeconds)
                trials.append(trial)
                guard trial.isSustained else { break }
                passed.append(rate)
            }
            // A short trial can pass at a rate the machine cannot hold: then the next lower rate that
            // passed is held, at most three in all, so the run reports a rate that was held.
            for rate in passed.reversed().prefix(3) {
                say("sustaining \(Int(rate)) unlocks/s for \(Int(sustainSeconds)) s")
                let hold = try await sustain(site, load, rate: rate, seconds: sustainSeconds)
                guard hold.isSustained else {
                    failedHolds.append(hold)
                    // The next hold starts on a server at rest, not on whatever the failed one left
                    // it doing: one run held no rate at all after 75 s at 4,000/s, far past the host,
                    // where 2,000/s took 17 s to come down to its usual tail and then held it.
                    let waited = try await untilQuiet(site)
                    say(String(format: "the server was at rest %.0f s after the failed hold", waited))
                    continue
                }
                sustained = hold
                say("64 clients at half that rate")
                let run = try await checkingOpenings(site) { await load.openLoop(rate: rate / 2, duration: runDuration, connections: 64) }
                paced = Report.Latency(concurrency: 64, run)
                break
            }
        } else {
            sustained = try await sustain(site, load, rate: 100, seconds: 1)
        }

        say("timing the access rule in-process")
        let decisions = accessDecisionsPerSecond(iterations: smoke ? 200_000 : 5_000_000)

        let ratio = unlocks[0].p50Ms / (2 * floorResult.roundTripP50Ms)
        let throughputRatio = sustained.map { $0.achievedPerSecond / (floorResult.pairsPerSecond / 2) }
        let c64 = unlocks.first { $0.concurrency == 64 }!
        let c16 = unlocks.first { $0.concurrency == 16 }!
        let withSignIns = Report.Latency(concurrency: 16, interfered)
        let targets = [
            Report.Target(
                name: "unlock p50 at concurrency 1 ≤ 3 × (2 × MQTT round-trip p50)", value: String(format: "%.2f ×", ratio), goal: "≤ 3 ×",
                met: ratio <= 3),
            Report.Target(
                name: "unlock p99 at concurrency 64 (back to back) with \(locks) locks", value: String(format: "%.2f ms", c64.p99Ms),
                goal: "≤ 10 ms", met: c64.p99Ms <= 10),
            Report.Target(
                name: "unlocks per second for \(Int(sustained?.seconds.rounded() ?? 0)) s with zero errors and double-openings",
                value: String(format: "%.0f/s", sustained?.achievedPerSecond ?? 0), goal: "≥ 2,000/s for 60 s",
                // Judged by the rate held (offered, and achieved within ``Report/Sustained/isSustained``'s
                // margin): every unlock of 2,000/s for 60 s granted in 60.005 s is 1,999.8/s achieved.
                met: (sustained?.targetPerSecond ?? 0) >= 2000 && (sustained?.seconds ?? 0) >= 59 && sustained?.isSustained == true),
            // Judged with 10,000 locks only: fewer say nothing of the target (`--locks 10000`).
            Report.Target(
                name: "server resident memory with \(locks) locks connected", value: String(format: "%.1f MiB", residentMiB),
                goal: "≤ 250 MB with 10,000", met: locks >= 10_000 ? residentMiB * 1.048576 <= 250 : nil),
            Report.Target(
                name: "unlock p99 during \(Int(signInsPerSecond)) sign-ins/s offered "
                    + String(format: "(%.1f/s signed in, the rest turned away 503)", Double(signIns.succeeded) / runDuration.seconds)
                    + " ÷ without",
                value: String(format: "%.2f ×", withSignIns.p99Ms / c16.p99Ms),
                goal: "≤ 2 ×", met: withSignIns.p99Ms <= 2 * c16.p99Ms),
        ]
        let host = (try? String(contentsOfFile: "/proc/sys/kernel/hostname", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "?"
        let report = Report(
            date: ISO8601DateFormatter().string(from: Date()), host: host, cores: ProcessInfo.processInfo.activeProcessorCount, locks: locks,
            lockTLS: lockTLS,
            floor: floorResult, lockRoundTripP50Ms: lockSamples.p50.milliseconds, store: storeResult, unlocks: unlocks, cpuAt64: cpuAt64,
            floorAt64: floorAt64, paced: paced,
            signInLoad: withSignIns, signInsPerSecondOffered: signInsPerSecond, signInsSucceeded: signIns.succeeded,
            signInsTurnedAway: signIns.turnedAway,
            sustained: sustained, failedHolds: failedHolds, rateSearch: trials, serverStartupSeconds: site.startupSeconds,
            serverResidentMiB: residentMiB,
            registrationSeconds: site.registrationSeconds, activationSeconds: site.activationSeconds, accessDecisionsPerSecond: decisions,
            latencyRatio: ratio, throughputRatio: throughputRatio,
            p99At64OverFloor: floorAt64.first { $0.qos == 0 }.map { c64.p99Ms / $0.p99Ms }, targets: targets)
        try Report.svg(unlocks: plotted, floor: floorSamples).write(toFile: "\(output)/latency.svg", atomically: true, encoding: .utf8)
        return report
    }

    func sustain(_ site: BenchSite, _ load: UnlockLoad, rate: Double, seconds: Double) async throws -> Report.Sustained {
        let before = try await site.openings()
        let run = await load.openLoop(rate: rate, duration: .milliseconds(Int64(seconds * 1000)))
        let after = try await settledOpenings(site, expectedAtLeast: before + run.granted)
        let slowest = run.slowestBySecond.max { $0.value < $1.value }
        return Report.Sustained(
            targetPerSecond: rate, achievedPerSecond: run.rate, seconds: run.seconds, granted: run.granted, errors: run.errors,
            openings: after - before, doubleOpenings: max(0, after - before - run.granted),
            missingOpenings: max(0, run.granted - (after - before)), p99Ms: run.samples.p99.milliseconds,
            secondsOver100Ms: run.slowestBySecond.values.filter { $0 > .milliseconds(100) }.count,
            slowestSecond: slowest?.key ?? 0, slowestSecondMs: slowest?.value.milliseconds ?? 0,
            slowestMsBySecond: (0..<((run.slowestBySecond.keys.max() ?? -1) + 1)).map { run.slowestBySecond[$0]?.milliseconds ?? 0 })
    }

    /// Runs `body`'s unlocks, then checks that every grant its clients saw opened a relay exactly once.
    func checkingOpenings(_ site: BenchSite, _ body: () async throws -> LoadRun) async throws -> LoadRun {
        let before = try await site.openings()
        let run = try await body()
        let after = try await settledOpenings(site, expectedAtLeast: before + run.granted)
        guard after - before == run.granted else { throw HarnessError("the locks opened \(after - before) times for \(run.granted) grants") }
        return run
    }

    /// Waits until the server uses less than a tenth of a core over a second (at most a minute), and
    /// says how long that took, in seconds.
    func untilQuiet(_ site: BenchSite) async throws -> Double {
        let start = ContinuousClock.now
        let pid = site.server.process.pid
        var before = ProcessStats.cpuSeconds(pid: pid) ?? 0
        while ContinuousClock.now - start < .seconds(60) {
            try await Task.sleep(for: .seconds(1))
            let now = ProcessStats.cpuSeconds(pid: pid) ?? 0
            if now - before < 0.1 { break }
            before = now
        }
        return (ContinuousClock.now - start).seconds
    }

    /// The fleet's opening count once it has caught up with the grants the clients saw.
    func settledOpenings(_ site: BenchSite, expectedAtLeast: Int) async throws -> Int {
        var openings = try await site.openings()
        let deadline = ContinuousClock.now + .seconds(5)
        while openings < expectedAtLeast && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
            openings = try await site.openings()
        }
        return openings
    }

    /// The pure access rule, called in a loop over varied inputs.
    func accessDecisionsPerSecond(iterations: Int) -> Double {
        let company = CompanyID.generate()
        let now = Date()
        let users = (0..<64).map {
            User(
                id: .generate(), companyID: company, email: "u\($0)@x.test", name: "U", role: .employee, securityLevel: $0 % 6, enabled: $0 % 9 != 0,
                mustChangePassword: false, createdAt: now, updatedAt: now)
        }
        let rooms = (0..<16).map { index in
            Room(
                id: .generate(), companyID: company, name: "R\(index)", description: "", type: .office, bookable: false,
                requiredLevel: index % 4 == 0 ? nil : index % 6, authorizedUsers: Set(users.prefix(index).map(\.id)), createdAt: now, updatedAt: now)
        }
        let locks = rooms.map {
            Lock(id: LockID("lock-\($0.name.lowercased())")!, companyID: company, roomID: $0.id, name: "L", state: .active, createdAt: now)
        }
        var allowed = 0
        let start = ContinuousClock.now
        for index in 0..<iterations {
            let room = index % rooms.count
            if AccessRule.decide(user: users[index % users.count], lock: locks[room], room: rooms[room]).allowed { allowed += 1 }
        }
        let seconds = start.duration(to: .now).seconds
        precondition(allowed > 0 && allowed < iterations)
        return Double(iterations) / seconds
    }

    func write(_ report: Report) throws {
        print(report.table)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(report).write(to: URL(fileURLWithPath: "\(output)/result.json"))
        print("\nWrote \(output)/result.json and \(output)/latency.svg")
    }
}
