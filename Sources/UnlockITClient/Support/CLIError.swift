import UnlockITCore
import UnlockITLocalization

/// A failure as the user sees it: one localized sentence, what to do about it, and an exit status.
public struct CLIError: Error, Sendable {
    public let message: String
    public let hint: String?
    public let status: ExitStatus
    /// The server's problem code when the server itself answered with one; nil for anything else
    /// (a proxy's page, no answer, the CLI's own checks).
    public var problemCode: String?
    /// A change was sent, or may have been, and no answer came: whether the server made it is not
    /// known. Commands whose answer carries something shown once (a generated password) say so.
    public var answerLost = false
    /// A change was answered with success, but the answer could not be read: the change was made,
    /// and what the answer carried (a generated password) is lost.
    public var answerUnreadable = false

    /// The change's answer did not come, or came and could not be read.
    var answerMissing: Bool { answerLost || answerUnreadable }

    /// For a change whose answer carried something shown once: `noAnswer` (it may have been made)
    /// when no answer came, or, when one came that could not be read, that the change was made;
    /// `hint` says how to recover either way.
    func missingAnswer(noAnswer message: String, hint: String, _ l: Localizer) -> CLIError {
        guard answerUnreadable else { return CLIError(message, hint: hint, status: status) }
        return CLIError(l("error.answer_unreadable_done"), hint: hint, status: .failure)
    }

    public init(_ message: String, hint: String? = nil, status: ExitStatus = .failure) {
        self.message = message
        self.hint = hint
        self.status = status
    }

    /// The server's problem code, said in the user's language. `reason` (for access denials and
    /// lock outcomes) is said too.
    static func problem(_ code: String, reason: String?, detail: String?, _ l: Localizer) -> CLIError {
        let status: ExitStatus
        switch ProblemCode(rawValue: code) {
        case .unauthenticated?: status = .notSignedIn
        case .adminRequired?, .passwordChangeRequired?, .userDisabled?: status = .forbidden
        case .accessDenied?, .lockDenied?, .tooManyDeniedUnlocks?, .tooManyUnlocks?: status = .accessDenied
        case .lockOffline?, .lockTimeout?, .brokerUnavailable?: status = .lockUnreachable
        // Sign-in refused: a wrong email or password (also the current one of `passwd`), or an
        // identity with no account here.
        case .invalidCredentials?, .idTokenInvalid?, .wrongPassword?, .noAccount?: status = .notSignedIn
        default: status = .failure
        }
        let key = "error.\(code)"
        var error: CLIError
        if !l.has(key) {
            error = CLIError(l("error.unknown_problem", code), hint: detail, status: status)
        } else {
            let message: String
            switch ProblemCode(rawValue: code) {
            case .accessDenied?: message = l(key, reasonText(reason ?? "", l))
            // Which field, and why, as the server put it (`name: 1–100 characters`): the API's field
            // names are the same in every language, and without them the message names nothing.
            case .invalidField? where detail?.isEmpty == false: message = l("error.invalid_field_detail", readable(detail ?? "", l))
            default: message = l(key)
            }
            // Why an ID token failed decides what to do about it: a fresh token does not mend a wrong
            // --client-id or an issuer the server does not trust.
            let hintKey =
                if code == ProblemCode.idTokenInvalid.rawValue, let reason, idTokenReasons.contains(reason) {
                    "hint.\(code).\(reason)"
                } else {
                    "hint.\(code)"
                }
            error = CLIError(message, hint: l.has(hintKey) ? l(hintKey) : nil, status: status)
        }
        error.problemCode = code
        return error
    }

    /// The reasons the server gives with `id_token_invalid`, each with a hint of its own
    /// (`hint.id_token_invalid.<reason>`).
    static let idTokenReasons = Set(IDTokenRejection.allCases.map(\.rawValue))

    /// A server's `field: reason` detail whose reason the catalogs put in words (`import.reason.*`),
    /// with the option the CLI names the field by: `--level: the level must be a whole number from
    /// 0`, not `securityLevel: invalid_level`. Any other detail as the server wrote it.
    static func readable(_ detail: String, _ l: Localizer) -> String {
        guard let colon = detail.firstRange(of: ": ") else { return detail }
        let (field, reason) = (String(detail[..<colon.lowerBound]), String(detail[colon.upperBound...]))
        guard Users.Import.RowReason(rawValue: reason) != nil else { return detail }
        let option =
            ["securityLevel": "--level", "email": "--email", "name": "--name", "role": "--role", "password": "--password-stdin"][field] ?? field
        return "\(option): \(l("import.reason.\(reason)"))"
    }

    /// Why the access rule said no (or yes), as a phrase in the user's language.
    static func reasonText(_ reason: String, _ l: Localizer) -> String {
        l.has("reason.\(reason)") ? l("reason.\(reason)") : reason
    }

    static func usage(_ message: String, _ l: Localizer) -> CLIError {
        CLIError(message, hint: l("hint.usage"), status: .usage)
    }
}
