import ArgumentParser
import Foundation
import UnlockITCore
import UnlockITLocalization

struct Unlock: AsyncParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(abstract: L.current("help.unlock.abstract"), discussion: L.current("help.unlock.discussion"))
    }

    @OptionGroup var global: GlobalOptions
    @Argument(help: ArgumentHelp(L.current("help.unlock.target"), valueName: "lock-or-room")) var target: String?
    @Option(help: ArgumentHelp(L.current("help.unlock.lock"), valueName: "lock")) var lock: String?

    func validate() throws {
        if target == nil && lock == nil { throw ValidationError(L.current("error.unlock_what")) }
    }

    func run() async throws {
        let context = CommandContext(global)
        let l = context.l
        let (api, _) = try context.signedIn()
        let entries: ItemsModel<AccessEntryModel>
        do {
            entries = try await api.get("/api/v1/me/access")
        } catch let disabled as CLIError where disabled.problemCode == ProblemCode.userDisabled.rawValue {
            try await attemptWhileDisabled(api, context, refusal: disabled)
            return
        }
        let chosen = try choose(from: entries.items, l)
        let unlocked: UnlockedModel = try await api.send("POST", "/api/v1/locks/\(chosen.lockId)/unlock")
        try context.output(unlocked) { l("unlock.done", chosen.lockName, chosen.lockId) }
    }

    /// A disabled account may not list its doors, but an attempt on a door it names by id (`--lock`, or
    /// a target written as a lock id) is the server's to refuse and to record in the audit log (reason
    /// `user_disabled`, or `lock_not_found` for an id that is not a lock of the company), as every
    /// other denial is: an admin sees that a disabled account still tries doors. A room's name cannot
    /// be turned into a lock without the list, so that attempt stays here. Either way the user is told
    /// that the account is disabled, as before, also once the server pauses their attempts.
    func attemptWhileDisabled(_ api: ServerAPI, _ context: CommandContext, refusal: CLIError) async throws {
        let named: String? = if let lock { try Lookup.lockID(lock, context.l) } else { target.flatMap { LockID($0)?.rawValue } }
        guard let lockID = named else { throw refusal }
        let unlocked: UnlockedModel
        do {
            unlocked = try await api.send("POST", "/api/v1/locks/\(lockID)/unlock")
        } catch let answer as CLIError where Self.refusalsOfADisabledAccount.contains(answer.problemCode ?? "") {
            throw refusal
        }
        // Not for a disabled account: the rule refuses it every lock. Said as it happened all the same.
        try context.output(unlocked) { context.l("unlock.done", lockID, lockID) }
    }

    /// What the server answers a disabled account's attempt: the rule's refusal, an id that is not a
    /// lock of the company, or its attempts paused after too many refusals or too many attempts.
    static let refusalsOfADisabledAccount: Set<String> = [
        ProblemCode.accessDenied.rawValue, ProblemCode.lockNotFound.rawValue, ProblemCode.tooManyDeniedUnlocks.rawValue,
        ProblemCode.tooManyUnlocks.rawValue,
    ]

    /// The lock to open: named directly, or the only lock of a named room, or the one picked among a room's locks.
    func choose(from entries: [AccessEntryModel], _ l: Localizer) throws -> AccessEntryModel {
        let wanted = try lock.map { try Lookup.lockID($0, l) }
        guard let target else {
            // Just --lock: the server decides whether it exists for this user.
            return entries.first { $0.lockId == wanted }
                ?? AccessEntryModel(
                    lockId: wanted ?? "", lockName: wanted ?? "", allowed: false, reason: "", online: false)
        }
        let roomKey = RoomName.key(target.trimmingCharacters(in: .whitespaces))
        let inRoom = entries.filter { $0.roomName.map(RoomName.key) == roomKey || $0.roomId == target.lowercased() }
        // With --lock the target is the room. Without, a lock's id; but a target that is also another
        // room's name is refused rather than guessed at: the wrong door must not open.
        if wanted == nil, let entry = entries.first(where: { $0.lockId == target.lowercased() }) {
            guard inRoom.allSatisfy({ $0.lockId == entry.lockId }) else {
                throw CLIError(l("error.ambiguous_target", target), hint: l("hint.unlock_choose"), status: .usage)
            }
            return entry
        }
        if let wanted {
            guard let entry = inRoom.first(where: { $0.lockId == wanted }) else {
                throw CLIError(l("error.lock_not_in_room", wanted, target), hint: l("hint.unlock_choose"), status: .failure)
            }
            return entry
        }
        switch inRoom.count {
        case 0:
            // Perhaps a lock id the user cannot see: let the server answer for it.
            if LockID.isValid(target) {
                return AccessEntryModel(lockId: target, lockName: target, allowed: false, reason: "", online: false)
            }
            throw CLIError(l("error.no_such_target", target), hint: l("hint.access"), status: .failure)
        case 1:
            return inRoom[0]
        default:
            let options = inRoom.enumerated().map { "  \($0.offset + 1). \($0.element.lockName) (\($0.element.lockId))" }
            guard Terminal.stdinIsTerminal else {
                throw CLIError(
                    l("error.several_locks", target) + "\n" + options.joined(separator: "\n"), hint: l("hint.unlock_choose"), status: .usage)
            }
            Terminal.error(l("unlock.which", target))
            Terminal.error(options.joined(separator: "\n"))
            guard let answer = Terminal.ask(l("prompt.choice", inRoom.count)), let number = Int(answer), (1...inRoom.count).contains(number) else {
                throw CLIError(l("error.cancelled"), status: .failure)
            }
            return inRoom[number - 1]
        }
    }
}

struct Access: AsyncParsableCommand {
    static var configuration: CommandConfiguration { CommandConfiguration(abstract: L.current("help.access.abstract")) }

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let context = CommandContext(global)
        let l = context.l
        let (api, _) = try context.signedIn()
        let entries: ItemsModel<AccessEntryModel> = try await api.get("/api/v1/me/access")
        try context.output(entries) {
            var table = Table([l("column.lock"), l("column.room"), l("column.can_open"), l("column.why"), l("column.online")])
            for entry in entries.items {
                table.add([
                    "\(entry.lockName) (\(entry.lockId))", entry.roomName ?? "–", context.yesNo(entry.allowed), CLIError.reasonText(entry.reason, l),
                    context.yesNo(entry.online),
                ])
            }
            return entries.items.isEmpty ? l("access.none") : table.rendered
        }
    }
}
