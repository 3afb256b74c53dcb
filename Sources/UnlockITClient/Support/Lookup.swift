import Foundation
import UnlockITCore
import UnlockITLocalization

/// Finds users by email or id and rooms by name or id, the way people refer to them.
struct Lookup {
    let api: ServerAPI

    func user(_ reference: String) async throws -> UserModel {
        if UserID(reference) != nil { return try await api.get("/api/v1/users/\(reference.lowercased())") }
        let users: ItemsModel<UserModel> = try await api.get("/api/v1/users")
        guard let user = users.items.first(where: { $0.email.caseInsensitiveCompare(reference.trimmingCharacters(in: .whitespaces)) == .orderedSame })
        else { throw CLIError(api.l("error.no_such_user", reference), hint: api.l("hint.list_users"), status: .failure) }
        return user
    }

    func room(_ reference: String) async throws -> RoomModel {
        if RoomID(reference) != nil { return try await api.get("/api/v1/rooms/\(reference.lowercased())") }
        let rooms: ItemsModel<RoomModel> = try await api.get("/api/v1/rooms")
        guard let room = rooms.items.first(where: { $0.name.caseInsensitiveCompare(reference.trimmingCharacters(in: .whitespaces)) == .orderedSame })
        else { throw CLIError(api.l("error.no_such_room", reference), hint: api.l("hint.list_rooms"), status: .failure) }
        return room
    }

    func lockID(_ reference: String) throws -> String {
        guard let id = LockID(reference.lowercased()) else {
            throw CLIError(api.l("error.bad_lock_id", reference), hint: api.l("hint.lock_id"), status: .usage)
        }
        return id.rawValue
    }
}
