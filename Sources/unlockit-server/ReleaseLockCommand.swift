import ArgumentParser
import Foundation
import Logging
import UnlockITCore
import UnlockITServer
import UnlockITStore

/// `unlockit-server release-lock`: the operator settles a dispute over a device id (a company holds
/// the id of a device another company owns) without SQL, and the holder's audit log says so.
struct ReleaseLockCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "release-lock",
        abstract: "Release a lock's device id from the company that holds it, to the company that owns the device.",
        discussion: """
            Run on the server host by an operator, to settle a dispute over a device id; the server may be \
            running. Without --yes it only shows the lock that holds the id, with its company's id. With \
            --yes and --holder (that company's id, as shown: a lock that took the id since is not touched) the \
            lock's broker account is deleted, which disconnects its device, then the lock, whatever its state, \
            and the holder's audit log gets a release_lock event with reason released_by_operator. With --to, \
            the id is kept for that company (from the holder too) for the lock id lapse, until it registers \
            the id, and that company's audit log gets a reserve_lock_id event saying so.
            """)

    @OptionGroup var settings: ConfigOptions

    @Argument(help: ArgumentHelp("The lock's device id.", valueName: "device-id"))
    var deviceID: String

    @Option(help: ArgumentHelp("The id of the company that holds the id (required with --yes).", valueName: "company-id"))
    var holder: String?

    @Option(help: ArgumentHelp("The id of the company to keep the id for, until it registers it.", valueName: "company-id"))
    var to: String?

    @Flag(help: "Release the id (without it, only show the lock that holds it).")
    var yes = false

    func validate() throws {
        guard LockID(deviceID) != nil else {
            throw ValidationError("\"\(deviceID)\" is not a device id (3–64 lowercase letters, digits and hyphens).")
        }
        if yes && holder == nil { throw ValidationError("--yes needs --holder, the id of the company shown to hold the lock.") }
        for (name, value) in [("--holder", holder), ("--to", to)] {
            if let value, CompanyID(value) == nil { throw ValidationError("\(name) \"\(value)\" is not a company id.") }
        }
        if let holder = holder.flatMap(CompanyID.init), holder == to.flatMap(CompanyID.init) {
            throw ValidationError("--to must name another company than --holder.")
        }
    }

    func run() async throws {
        let configuration = try settings.load()
        let id = LockID(deviceID)!
        // The server's database as the server left it: not a new one made where a wrong path points,
        // nor one this command would migrate under a running server of an older version.
        guard FileManager.default.fileExists(atPath: configuration.databasePath) else {
            throw Self.failure("There is no database at \(configuration.databasePath).")
        }
        guard try SQLiteStore.isCurrent(path: configuration.databasePath) else {
            throw Self.failure("The database at \(configuration.databasePath) is of an older version: start this version's server first.")
        }
        let store = try SQLiteStore(path: configuration.databasePath)
        guard let held = try await store.lockOfAnyCompany(id) else { throw Self.failure("No lock has the device id \(id).") }
        let recipient = to.flatMap(CompanyID.init)
        if let recipient, try await store.company(recipient) == nil { throw Self.failure("There is no company \(recipient).") }
        guard yes, let holder = holder.flatMap(CompanyID.init) else {
            print("\(try await Self.describe(held, store))\nNothing changed. Run again with --holder \(held.companyID) --yes to release the id.")
            return
        }
        guard held.companyID == holder else { throw try await Self.notHeld(id, by: holder, now: held, store) }
        // The broker account first, while the lock still holds the id: once the id is free, another
        // registration may make an account of that name, which must not be deleted. A broker out of
        // reach leaves the lock as it is, and the command can be run again. (A new broker password
        // the holder's admin asks for in the moment between the two steps gives the device an account
        // again, until the id is registered anew.)
        do {
            var logger = Logger(label: "unlockit.release-lock")
            logger.logLevel = .critical
            try await OperatorBroker.deleteLockAccount(id, configuration: configuration, logger: logger)
        } catch {
            throw Self.failure("The lock was not released: its broker account could not be deleted (\(error)). Run the command again.")
        }
        // Checked again as the lock is deleted: the holder's lock, not one that took the id since.
        guard let released = try await store.releaseLock(id, from: holder, reservingFor: recipient, at: Date()) else {
            // Another company took the id over (the holder's hold had lapsed) while the account went:
            // the account deleted may have been its new one, which a new broker password makes again.
            let now = try await store.lockOfAnyCompany(id)
            let taken =
                now.map {
                    " Its broker account was deleted meanwhile: that company's admins bring it back with `unlockit locks broker-password \($0.id)`."
                } ?? ""
            throw try await Self.notHeld(id, by: holder, now: now, store, then: taken)
        }
        print("Released: \(try await Self.describe(released, store))\nIts broker account is deleted, which disconnected its device.")
        if let recipient {
            print(
                "The id is kept for company \(recipient) until it registers the id, for \(configuration.lockIDLapse) s at most; its audit log says so."
            )
        }
    }

    /// `holder` does not hold the id (any more): who does, if anyone, and a failure.
    static func notHeld(_ id: LockID, by holder: CompanyID, now: Lock?, _ store: SQLiteStore, then: String = "") async throws -> ExitCode {
        var nothing = "The lock was not released: company \(holder) holds no lock of the device id \(id)."
        if let now { nothing += " It is held by: \(try await describe(now, store))." }
        return failure(nothing + then)
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

    /// Says `message` on stderr, and fails the command.
    static func failure(_ message: String) -> ExitCode {
        FileHandle.standardError.write(Data("\(message)\n".utf8))
        return ExitCode.failure
    }
}
