import Foundation
import Glibc
import SiteHarness
import Testing
import UnlockITLocalization

@testable import UnlockITClient

/// The CLI's HTTP client against answers the UnlockIT server never gives: a redirect, a proxy's error page.
@Suite(.timeLimit(.minutes(10)))
struct ServerAnswerTests {
    @Test func aRedirectIsNotFollowedSoTheBodyGoesNowhereElse() async throws {
        let elsewhere = try ScriptedHTTPServer { _ in "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}" }
        defer { elsewhere.stop() }
        let target = elsewhere.port
        let redirecting = try ScriptedHTTPServer { _ in
            "HTTP/1.1 308 Permanent Redirect\r\nLocation: http://127.0.0.1:\(target)/api/v1/auth/sign-in\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        }
        defer { redirecting.stop() }

        let api = ServerAPI(baseURL: "http://127.0.0.1:\(redirecting.port)", token: nil, l: Localizer(.english))
        struct Body: Encodable { var email = "a@b.test", password = "my secret password" }
        await #expect(throws: CLIError.self) { try await api.perform("POST", "/api/v1/auth/sign-in", Body()) }
        #expect(redirecting.accepted == 1)
        try await Task.sleep(for: .milliseconds(200))
        #expect(elsewhere.accepted == 0, "the request, password and all, was sent on to where the redirect pointed")
    }

    @Test("An invalid field names itself as the server did, in the user's language around it")
    func anInvalidFieldSaysWhich() {
        let en = CLIError.problem("invalid_field", reason: nil, detail: "name: 1–100 characters", Localizer(.english))
        #expect(en.message == "A value you gave is not valid (the server says: name: 1–100 characters).")
        let da = CLIError.problem("invalid_field", reason: nil, detail: "name: 1–100 characters", Localizer(.danish))
        #expect(da.message == "En værdi, du angav, er ikke gyldig (serveren siger: name: 1–100 characters).")
        #expect(CLIError.problem("invalid_field", reason: nil, detail: nil, Localizer(.english)).message == "A value you gave is not valid.")
        // A reason the catalogs put in words is said in them, with the option's name for the field.
        let level = CLIError.problem("invalid_field", reason: nil, detail: "securityLevel: invalid_level", Localizer(.english))
        #expect(level.message == "A value you gave is not valid (the server says: --level: the level must be a whole number from 0).")
        let email = CLIError.problem("invalid_field", reason: nil, detail: "email: invalid_email", Localizer(.danish))
        #expect(email.message.contains("--email: ") && !email.message.contains("invalid_email"), "\(email.message)")
    }

    @Test("Why an ID token failed says what to do about it, in both languages; an unknown reason gets the general hint")
    func anIDTokensReasonChoosesTheHint() {
        let reasons = [
            "malformed", "unknown_issuer", "algorithm_not_allowed", "bad_signature", "wrong_audience", "expired", "email_not_verified", "reused",
            "identity_mismatch",
        ]
        // The server's list, as the API document gives it.
        #expect(Set(reasons) == CLIError.idTokenReasons)
        for language in [Language.english, .danish] {
            let l = Localizer(language)
            let general = CLIError.problem("id_token_invalid", reason: nil, detail: nil, l)
            #expect(general.hint == l("hint.id_token_invalid") && general.status == .notSignedIn)
            var hints: Set<String> = []
            for reason in reasons {
                let error = CLIError.problem("id_token_invalid", reason: reason, detail: nil, l)
                #expect(error.message == general.message && error.status == .notSignedIn)
                #expect(error.hint != nil && error.hint != general.hint, "\(language) \(reason)")
                hints.insert(error.hint ?? "")
            }
            #expect(hints.count == reasons.count, "\(language): two reasons share a hint")
            #expect(CLIError.problem("id_token_invalid", reason: "new_in_a_later_server", detail: nil, l).hint == general.hint)
        }
        #expect(
            CLIError.problem("id_token_invalid", reason: "wrong_audience", detail: nil, Localizer(.english)).hint?.contains("--client-id") == true)
        // Another account than the user's at the provider: an admin unlinks, the CLI says how.
        for language in [Language.english, .danish] {
            #expect(
                CLIError.problem("id_token_invalid", reason: "identity_mismatch", detail: nil, Localizer(language)).hint?.contains("unlink-oidc")
                    == true)
        }
    }

    @Test func aProxysErrorPageExitsWithWhatItMeans() async throws {
        for (code, status) in [
            (502, ExitStatus.serverUnreachable), (503, .serverUnreachable), (401, .notSignedIn), (403, .forbidden), (418, .failure),
        ] {
            let proxy = try ScriptedHTTPServer { _ in
                "HTTP/1.1 \(code) Whatever\r\nContent-Type: text/html\r\nContent-Length: 6\r\nConnection: close\r\n\r\n<html>"
            }
            defer { proxy.stop() }
            let api = ServerAPI(baseURL: "http://127.0.0.1:\(proxy.port)", token: nil, l: Localizer(.english))
            do {
                try await api.perform("GET", "/api/v1/me")
                Issue.record("HTTP \(code) was taken for success")
            } catch let error as CLIError {
                #expect(error.status == status, "HTTP \(code): \(error)")
            }
        }
    }

    @Test func aSignOutTheServerFailedLeavesTheSessionNotEnded() async throws {
        func answer(_ reply: String) async throws -> SignOutAnswer {
            let server = try ScriptedHTTPServer { _ in reply }
            defer { server.stop() }
            let api = ServerAPI(baseURL: "http://127.0.0.1:\(server.port)", token: "uit_x", l: Localizer(.english))
            do {
                try await api.perform("POST", "/api/v1/auth/sign-out")
                return .ended
            } catch let error as CLIError {
                return SignOutAnswer(error)
            }
        }
        func problem(_ status: Int, _ code: String) -> String {
            let body = #"{"type":"about:blank","title":"t","status":\#(status),"code":"\#(code)"}"#
            return "HTTP/1.1 \(status) X\r\nContent-Type: application/problem+json\r\nContent-Length: \(body.utf8.count)\r\n"
                + "Connection: close\r\n\r\n\(body)"
        }
        #expect(try await answer("HTTP/1.1 204 No Content\r\nContent-Length: 0\r\nConnection: close\r\n\r\n") == .ended)
        // The server no longer knows the token: the session is over already.
        #expect(try await answer(problem(401, "unauthenticated")) == .ended)
        // The server answered but did not end it (its audit log full, or a failure): not ended.
        let busy = try await answer(problem(503, "server_busy"))
        guard case .failed(let error) = busy else { Issue.record("503 server_busy taken for \(busy)"); return }
        #expect(error.status == .failure && error.message == Localizer(.english)("error.server_busy"))
        guard case .failed = try await answer(problem(500, "internal_error")) else { Issue.record("500 taken for ended"); return }
        // A proxy's 401 page: the token never reached the server, which may still accept it.
        let proxied = try await answer("HTTP/1.1 401 Unauthorized\r\nContent-Type: text/html\r\nContent-Length: 6\r\nConnection: close\r\n\r\n<html>")
        guard case .failed(let refusal) = proxied else { Issue.record("a proxy's 401 taken for \(proxied)"); return }
        #expect(refusal.status == .notSignedIn)
        // A proxy's 502 page: the server was not reached.
        #expect(try await answer("HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n") == .unreachable)
    }

    @Test("A change that got no answer may have been made: not said as a server that cannot be reached")
    func aLostAnswerIsNotAnUnreachableServer() async throws {
        let l = Localizer(.english)
        let silent = try ScriptedHTTPServer { _ in nil }
        defer { silent.stop() }
        // A token of this test's own, to tell its requests from any meant for another test's server.
        let token = "uit_silent\(UInt32.random(in: 0...UInt32.max))"
        let api = ServerAPI(baseURL: "http://127.0.0.1:\(silent.port)", token: token, l: l)
        do {
            try await api.perform("POST", "/api/v1/rooms", ["name": "Lab"])
            Issue.record("a closed connection was taken for success")
        } catch let error as CLIError {
            #expect(error.answerLost && error.message == l("error.no_answer", "http://127.0.0.1:\(silent.port)"), "\(error)")
            #expect(error.status == .serverUnreachable)
        }
        // Reading changes nothing: said as before.
        do {
            try await api.perform("GET", "/api/v1/rooms")
            Issue.record("a closed connection was taken for success")
        } catch let error as CLIError {
            #expect(!error.answerLost && error.message == l("error.server_unreachable", "http://127.0.0.1:\(silent.port)"), "\(error)")
        }
        // Nothing listening: the change went nowhere.
        let nowhere = ServerAPI(baseURL: "http://127.0.0.1:\(try Network.freePort())", token: "uit_x", l: l)
        do {
            try await nowhere.perform("POST", "/api/v1/rooms", ["name": "Lab"])
            Issue.record("a refused connection was taken for success")
        } catch let error as CLIError {
            #expect(!error.answerLost && error.status == .serverUnreachable, "\(error)")
        }
        // Each was sent once: the change is not sent again on a connection of its own.
        #expect(silent.requests.filter { $0.contains(token) }.count == 2, "\(silent.requests)")
    }

    @Test func anImportAnsweredByAProxySaysWhatItMeans() {
        let l = Localizer(.english)
        // A gateway's timeout may come after the server committed: the users may exist.
        for code in [502, 504] {
            let error = Users.Import.notTheServers(code, l)
            #expect(error.message == l("error.import_answer_unreadable") && error.status == .serverUnreachable, "\(code)")
        }
        #expect(Users.Import.notTheServers(401, l).status == .notSignedIn)
        #expect(Users.Import.notTheServers(403, l).status == .forbidden)
        #expect(Users.Import.notTheServers(418, l).message == l("error.http_status", 418))
    }
}
