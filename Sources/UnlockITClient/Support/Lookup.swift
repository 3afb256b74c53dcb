import Foundation
import UnlockITCore
import UnlockITLocalization

/// Finds users by email or id and rooms by name or id, the way people refer to them.
struct Lookup {
    let api: ServerAPI

    func user(_ reference: String) async throws -> UserModel {
        if UserID(reference) != nil { return try await api.get("/api/v1/users/\(reference.lowercased())") }
        let users: ItemsModel<UserModel> = try await api.get("/api/v1/users")
        // The address as the server keeps it (lowercased, composed), compared exactly: a looser
        // comparison (one that takes ß for ss) could pick another user to edit or remove.
        let email = Validation.email(reference)
        guard let email, let user = users.items.first(where: { $0.email.unicodeScalars.elementsEqual(email.unicodeScalars) }) else {
            throw CLIError(api.l("error.no_such_user", reference), hint: api.l("hint.list_users"), status: .failure)
        }
        return user
    }

    /// A user's id: one given as an id is taken as it is (the audit log names users the server no
    /// longer knows); an email is looked up.
    func userID(_ reference: String) async throws -> String {
        if let id = UserID(reference) { return id.rawValue }
        return try await user(reference).id
    }

    /// A room's id, the same way: an id as given, a name looked up.
    func roomID(_ reference: String) async throws -> String {
        if let id = RoomID(reference) { return id.rawValue }
        return try await room(reference).id
    }

    func room(_ reference: String) async throws -> RoomModel {
        if RoomID(reference) != nil { return try await api.get("/api/v1/rooms/\(reference.lowercased())") }
        let rooms: ItemsModel<RoomModel> = try await api.get("/api/v1/rooms")
        let name = reference.trimmingCharacters(in: .whitespaces)
        // The exact name first; then one the server counts as the same name (`RoomName.key`). Rooms
        // whose names differ only in the case of letters beyond ASCII can both exist in a database
        // from before the server made them one name (its migration v4), and guessing between them
        // could change or remove the wrong one.
        if let exact = rooms.items.first(where: { $0.name == name }) { return exact }
        let key = RoomName.key(name)
        let alike = rooms.items.filter { RoomName.key($0.name) == key }
        guard let room = alike.first else {
            throw CLIError(api.l("error.no_such_room", reference), hint: api.l("hint.list_rooms"), status: .failure)
        }
        guard alike.count == 1 else {
            throw CLIError(
                api.l("error.ambiguous_room", reference, alike.map(\.name).joined(separator: ", ")), hint: api.l("hint.ambiguous_room"),
                status: .failure)
        }
        return room
    }

    func lockID(_ reference: String) throws -> String { try Self.lockID(reference, api.l) }

    /// A lock id as the user typed it, checked: it goes into a URL's path, where `door/retire?`
    /// would name another endpoint.
    static func lockID(_ reference: String, _ l: Localizer) throws -> String {
        guard let id = LockID(reference.lowercased()) else {
            throw CLIError(l("error.bad_lock_id", reference), hint: l("hint.lock_id"), status: .usage)
        }
        return id.rawValue
    }
}
