import ArgumentParser
import Foundation
import UnlockITCore
import UnlockITServer
import UnlockITStore

/// `unlockit-server release-lock`: the operator settles a dispute over a device id (a company holds
/// the id of a device another company owns) without SQL, and the holder's audit log says so.
struct ReleaseLockCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "release-lock",
        abstract: "Release a lock's device id from the company that holds it, so that another company may register it.",
        discussion: """
            Run on the server host by an operator, to settle a dispute over a device id. Without --yes it \
            only shows the lock that holds the id. With --yes that lock is deleted from its company, whatever \
            its state, and the company's audit log gets a release_lock event with reason released_by_operator. \
            Its broker account is replaced when the id is registered again. The server may be running.
            """)

    @OptionGroup var settings: ConfigOptions

    @Argument(help: ArgumentHelp("The lock's device id.", valueName: "device-id"))
    var deviceID: String

    @Flag(help: "Release the id (without it, only show the lock that holds it).")
    var yes = false

    func run() async throws {
        let configuration = try settings.load()
        guard let id = LockID(deviceID) else {
            throw ValidationError("\"\(deviceID)\" is not a device id (3–64 lowercase letters, digits and hyphens).")
        }
        let store = try SQLiteStore(path: configuration.databasePath)
        guard let held = try await store.lockOfAnyCompany(id) else { throw Self.noLock(id) }
        guard yes else {
            print("\(try await Self.describe(held, store))\nNothing changed. Run again with --yes to release the id.")
            return
        }
        // Whatever holds the id now, which is what the operator asked to release.
        guard let released = try await store.releaseLock(id, at: Date()) else { throw Self.noLock(id) }
        print("Released: \(try await Self.describe(released, store))")
    }

    /// The lock's id, name, company and state, with the date it entered that state.
    static func describe(_ lock: Lock, _ store: SQLiteStore) async throws -> String {
        let company = try await store.company(lock.companyID)
        let since: Date =
            switch lock.state {
            case .registered: lock.createdAt
            case .active: lock.activatedAt ?? lock.createdAt
            case .retired: lock.retiredAt ?? lock.createdAt
            }
        return """
            \(lock.id) "\(lock.name)" of company "\(company?.name ?? "?")" (\(lock.companyID)), \
            \(lock.state.rawValue) since \(since.formatted(.iso8601))
            """
    }

    static func noLock(_ id: LockID) -> some Error {
        FileHandle.standardError.write(Data("No lock has the device id \(id).\n".utf8))
        return ExitCode.failure
    }
}
