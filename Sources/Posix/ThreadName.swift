import Glibc

/// A thread's name in the kernel, where `top -H`, `perf`, gdb and /proc show it.
public enum ThreadName {
    /// The longest name Linux keeps, in bytes.
    public static let maximumLength = 15

    /// Names the calling thread `name`, cut to ``maximumLength`` bytes at a character boundary.
    /// Written to /proc (Glibc does not bring `pthread_setname_np` to Swift); Foundation's
    /// `Thread.name` left threads with their parent's name at times. Whether it was written.
    @discardableResult
    public static func setCurrent(_ name: String) -> Bool {
        let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        let kept = Array(fitted(name).utf8)
        return kept.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == kept.count
    }

    /// The calling thread's name in the kernel, or nil.
    public static func current() -> String? {
        let fd = open("/proc/thread-self/comm", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = read(fd, &buffer, buffer.count)
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count], as: UTF8.self).trimmingSuffix("\n")
    }

    /// `name` cut to ``maximumLength`` bytes without splitting a character.
    public static func fitted(_ name: String) -> String {
        var kept = Substring(name)
        while kept.utf8.count > maximumLength { kept.removeLast() }
        return String(kept)
    }
}

extension String {
    fileprivate func trimmingSuffix(_ suffix: String) -> String { hasSuffix(suffix) ? String(dropLast(suffix.count)) : self }
}
