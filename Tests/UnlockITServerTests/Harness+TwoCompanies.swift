@testable import UnlockITServer

/// Two companies' signed-in admins, Alpha's and Beta's, each with a room: Lab and Hall.
struct TwoCompanies: Sendable {
    let alpha: String
    let beta: String
    let alphaRoom: String
    let betaRoom: String
}

extension Harness {
    /// Runs `body` through the router over a broker that makes every account (given to `body` for
    /// the commands it was sent), with Alpha and Beta set up: the start of every test of what one
    /// company may learn or take of another's lock ids.
    func runWithTwoCompanies(_ body: @escaping @Sendable (API, TwoCompanies, AgreeableBroker) async throws -> Void) async throws {
        let (accounts, broker) = AgreeableBroker.make()
        try await run(over: try services(accounts: accounts)) { api in
            let alpha = try await api.company("Alpha")
            let beta = try await api.company("Beta")
            let companies = TwoCompanies(
                alpha: alpha, beta: beta, alphaRoom: try await api.createRoom(alpha, "Lab"), betaRoom: try await api.createRoom(beta, "Hall"))
            try await body(api, companies, broker)
        }
    }
}
