import Foundation

/// The wall clock, injectable so that tests can move time instead of sleeping.
public struct ServerClock: Sendable {
    public let now: @Sendable () -> Date

    public init(now: @escaping @Sendable () -> Date) { self.now = now }

    public static let system = ServerClock(now: { Date() })
}
