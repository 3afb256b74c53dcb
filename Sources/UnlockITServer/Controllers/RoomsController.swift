import Foundation
import Hummingbird
import UnlockITCore

/// Admin: the company's rooms and who is individually authorized for them.
struct RoomsController {
    let services: AppServices

    struct Create: RequestBody {
        var name: String
        var description: String?
        var type: RoomType
        var bookable: Bool?
        /// `null` or absent: only authorized users may enter.
        var requiredLevel: Int?
        static let fields: Set<String> = ["name", "description", "type", "bookable", "requiredLevel"]
        static let nullableFields: Set<String> = ["requiredLevel"]
    }

    struct Update: RequestBody {
        var name: String?
        var description: String?
        var type: RoomType?
        var bookable: Bool?
        /// Absent: unchanged; `null`: only authorized users may enter.
        var requiredLevel: Patch<Int?>
        static let fields: Set<String> = ["name", "description", "type", "bookable", "requiredLevel"]
        static let nullableFields: Set<String> = ["requiredLevel"]

        enum CodingKeys: String, CodingKey { case name, description, type, bookable, requiredLevel }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            name = try container.decodeIfPresent(String.self, forKey: .name)
            description = try container.decodeIfPresent(String.self, forKey: .description)
            type = try container.decodeIfPresent(RoomType.self, forKey: .type)
            bookable = try container.decodeIfPresent(Bool.self, forKey: .bookable)
            requiredLevel = try container.decodePatch(Int?.self, forKey: .requiredLevel)
        }
    }

    func addRoutes(to group: RouterGroup<AppContext>) {
        group.get("rooms", use: list)
        group.post("rooms", use: create)
        group.get("rooms/:id", use: show)
        group.patch("rooms/:id", use: update)
        group.delete("rooms/:id", use: delete)
        group.put("rooms/:id/authorized-users/:userId", use: authorize)
        group.delete("rooms/:id/authorized-users/:userId", use: deauthorize)
    }

    static func roomID(_ context: AppContext) throws -> RoomID {
        guard let text = context.parameters.get("id"), let id = RoomID(text) else { throw APIError.invalidID("the room id") }
        return id
    }

    @Sendable func list(request: Request, context: AppContext) async throws -> ListResponse<RoomResponse> {
        let admin = try context.requireIdentity().user
        return ListResponse(items: try await services.store.rooms(in: admin.companyID).map(RoomResponse.init))
    }

    @Sendable func show(request: Request, context: AppContext) async throws -> RoomResponse {
        let admin = try context.requireIdentity().user
        guard let room = try await services.store.room(try Self.roomID(context), in: admin.companyID) else { throw APIError.notFound(.roomNotFound) }
        return RoomResponse(room)
    }

    private static func validLevel(_ level: Int?) throws -> Int? {
        guard let level else { return nil }
        guard let valid = Validation.level(level) else { throw APIError.invalidField("requiredLevel", "0 to \(Validation.maximumLevel), or null") }
        return valid
    }

    @Sendable func create(request: Request, context: AppContext) async throws -> EditedResponse<RoomResponse> {
        let identity = try context.requireIdentity()
        let admin = identity.user
        let body = try await request.decodeStrict(Create.self, context: context)
        guard let name = Validation.name(body.name) else { throw APIError.invalidField("name", "1–100 characters") }
        guard let description = Validation.description(body.description ?? "") else {
            throw APIError.invalidField("description", "at most 1000 characters")
        }
        let now = services.clock.now()
        let room = Room(
            id: .generate(), companyID: admin.companyID, name: name, description: description, type: body.type, bookable: body.bookable ?? false,
            requiredLevel: try Self.validLevel(body.requiredLevel), authorizedUsers: [], createdAt: now, updatedAt: now)
        try await services.store.createRoom(
            room, checking: services.adminCheck(identity), audit: services.audit(.createRoom, by: admin, company: admin.companyID, room: room.id))
        return EditedResponse(status: .created, response: RoomResponse(room))
    }

    @Sendable func update(request: Request, context: AppContext) async throws -> RoomResponse {
        let identity = try context.requireIdentity()
        let admin = identity.user
        let id = try Self.roomID(context)
        let body = try await request.decodeStrict(Update.self, context: context)
        let name = try body.name.map { name in
            guard let valid = Validation.name(name) else { throw APIError.invalidField("name", "1–100 characters") }
            return valid
        }
        let description = try body.description.map { description in
            guard let valid = Validation.description(description) else { throw APIError.invalidField("description", "at most 1000 characters") }
            return valid
        }
        var level: Int?? = nil
        if case .value(let requested) = body.requiredLevel { level = .some(try Self.validLevel(requested)) }
        let now = services.clock.now()
        do {
            // Only the fields sent change, on the row as it is when the write starts.
            let room = try await services.store.updateRoom(
                id, in: admin.companyID, checking: services.adminCheck(identity),
                audit: services.audit(.updateRoom, by: admin, company: admin.companyID, room: id)
            ) { room in
                if let name { room.name = name }
                if let description { room.description = description }
                if let type = body.type { room.type = type }
                if let bookable = body.bookable { room.bookable = bookable }
                if let level { room.requiredLevel = level }
                room.updatedAt = now
            }
            return RoomResponse(room)
        } catch StoreError.notFound {
            throw APIError.notFound(.roomNotFound)
        }
    }

    @Sendable func delete(request: Request, context: AppContext) async throws -> HTTPResponse.Status {
        let identity = try context.requireIdentity()
        let admin = identity.user
        let id = try Self.roomID(context)
        do {
            try await services.store.deleteRoom(
                id, in: admin.companyID, checking: services.adminCheck(identity),
                audit: services.audit(.deleteRoom, by: admin, company: admin.companyID, room: id))
        } catch StoreError.notFound {
            throw APIError.notFound(.roomNotFound)
        }
        return .noContent
    }

    @Sendable func authorize(request: Request, context: AppContext) async throws -> RoomResponse {
        try await setAuthorization(true, context: context)
    }

    @Sendable func deauthorize(request: Request, context: AppContext) async throws -> RoomResponse {
        try await setAuthorization(false, context: context)
    }

    private func setAuthorization(_ authorized: Bool, context: AppContext) async throws -> RoomResponse {
        let identity = try context.requireIdentity()
        let admin = identity.user
        let room = try Self.roomID(context)
        let user = try UsersController.userID(context, "userId")
        do {
            try await services.store.setAuthorization(
                user: user, room: room, in: admin.companyID, authorized: authorized, checking: services.adminCheck(identity),
                audit: services.audit(authorized ? .authorizeUser : .deauthorizeUser, by: admin, company: admin.companyID, room: room, subject: user))
        } catch StoreError.notFound {
            throw APIError.notFound(.userNotFound)
        }
        guard let updated = try await services.store.room(room, in: admin.companyID) else { throw APIError.notFound(.roomNotFound) }
        return RoomResponse(updated)
    }
}
