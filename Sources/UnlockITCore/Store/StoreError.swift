/// Why the store refused a change. The server turns these into problem+json answers.
public enum StoreError: Error, Sendable, Equatable {
    /// The thing to change does not exist in the caller's company.
    case notFound
    /// An email address is already in use (emails are unique across companies).
    case emailTaken
    /// A room of that name already exists in the company.
    case roomNameTaken
    /// A lock with that device id is already registered (device ids are global: they are MQTT accounts).
    case lockIDTaken
    /// The change would leave the company without an enabled admin.
    case lastAdmin
    /// The room still has locks that are not retired.
    case roomHasLocks
    /// The lock is retired: it can be neither activated nor retired again.
    case lockRetired
}
