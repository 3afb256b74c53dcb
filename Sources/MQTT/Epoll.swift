import CMosquitto
import Glibc

/// A thin wrapper over Linux's epoll and an eventfd used to wake the loop from other threads.
struct Epoll: ~Copyable {
    let fd: Int32
    let wakeFD: Int32
    /// The `u64` payload that marks the wake-up eventfd in epoll results.
    static let wakeToken: UInt64 = .max

    init() {
        fd = epoll_create1(Int32(EPOLL_CLOEXEC))
        wakeFD = eventfd(0, Int32(EFD_NONBLOCK) | Int32(EFD_CLOEXEC))
        precondition(fd >= 0 && wakeFD >= 0, "epoll/eventfd creation failed: errno \(errno)")
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.u64 = Self.wakeToken
        precondition(epoll_ctl(fd, EPOLL_CTL_ADD, wakeFD, &event) == 0)
    }

    deinit {
        close(fd)
        close(wakeFD)
    }

    func add(_ socket: Int32, write: Bool) {
        var event = Self.event(socket, write: write)
        _ = epoll_ctl(fd, EPOLL_CTL_ADD, socket, &event)
    }

    func modify(_ socket: Int32, write: Bool) {
        var event = Self.event(socket, write: write)
        _ = epoll_ctl(fd, EPOLL_CTL_MOD, socket, &event)
    }

    /// Removing a socket libmosquitto already closed fails with EBADF, harmlessly: closing removed it.
    func remove(_ socket: Int32) {
        var event = epoll_event()
        _ = epoll_ctl(fd, EPOLL_CTL_DEL, socket, &event)
    }

    func wake() {
        var one: UInt64 = 1
        _ = write(wakeFD, &one, 8)
    }

    func drainWake() {
        var value: UInt64 = 0
        _ = read(wakeFD, &value, 8)
    }

    /// Waits up to `timeoutMilliseconds` (−1: forever) and returns how many events were filled in.
    func wait(into events: UnsafeMutableBufferPointer<epoll_event>, timeoutMilliseconds: Int32) -> Int {
        let count = epoll_wait(fd, events.baseAddress, Int32(events.count), timeoutMilliseconds)
        return count < 0 ? 0 : Int(count)
    }

    private static func event(_ socket: Int32, write: Bool) -> epoll_event {
        var event = epoll_event()
        event.events = EPOLLIN.rawValue | (write ? EPOLLOUT.rawValue : 0)
        event.data.u64 = UInt64(UInt32(bitPattern: socket))
        return event
    }
}
