import Hummingbird
import Synchronization
import UnlockITCore

/// One user import at a time per company, dry runs included, from the request's head to its answer:
/// another is answered 409 `import_in_progress` before its body is read.
///
/// An import's body may be 4 MiB, read at the client's pace, and a real import then holds its rows
/// while their passwords hash, minutes for a large file. Unbounded, one admin could start one on
/// every connection the server allows them and hold gigabytes. Only an admin's request takes the
/// turn: anyone else's is refused after this by ``RequireAdmin``, and must not keep the company's
/// admins from importing meanwhile.
struct OneImportPerCompany: RouterMiddleware {
    typealias Context = AppContext

    final class Running: Sendable {
        let companies = Mutex<Set<CompanyID>>([])
    }

    private let running = Running()

    func handle(_ request: Request, context: AppContext, next: (Request, AppContext) async throws -> Response) async throws -> Response {
        let user = try context.requireIdentity().user
        guard user.role == .admin else { return try await next(request, context) }
        guard running.companies.withLock({ $0.insert(user.companyID).inserted }) else {
            throw APIError.conflict(.importInProgress, "Another import is running for this company")
        }
        defer { running.companies.withLock { _ = $0.remove(user.companyID) } }
        return try await next(request, context)
    }
}
