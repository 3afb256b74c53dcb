import SiteHarness

/// Polls `condition` every 5 ms until it holds; throws once `timeout` has passed (a regression
/// fails, it does not hang).
func waitUntil(timeout: Duration = .seconds(5), _ condition: () -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        guard ContinuousClock.now < deadline else { throw HarnessError("timed out after \(timeout)") }
        try await Task.sleep(for: .milliseconds(5))
    }
}
