import CMosquitto
import Glibc

/// libmosquitto 2.0 gives every client a socket pair and writes a byte into it for every packet it
/// queues, to wake `mosquitto_loop`'s `select()`. A client driven by an event loop of its own, as
/// ours are, never reads it (eclipse-mosquitto/mosquitto#3062): each packet costs a system call, the
/// pair fills after a few hundred packets (kernel memory, per client), and from then on every write
/// fails and leaves `errno` at `EAGAIN`, which a callback that publishes hands back to the loop.
enum SocketPair {
    /// Takes the pair away from a client just made, leaving it as libmosquitto leaves one whose
    /// `socketpair()` failed: `INVALID_SOCKET`, which every use of the pair checks. libmosquitto 1.6
    /// and 2.0 keep the pair in the two `int`s after the client's socket at the start of `struct
    /// mosquitto`; they are taken only after checking that they are that pair: the socket is still
    /// -1, both are Unix stream sockets, and a byte written to the second arrives at the first.
    /// Returns whether the pair was taken. Call it right after `mosquitto_new`, before the client is
    /// used anywhere else.
    static func detach(from mosq: OpaquePointer) -> Bool {
        var (major, minor, revision): (Int32, Int32, Int32) = (0, 0, 0)
        mosquitto_lib_version(&major, &minor, &revision)
        guard (major == 2 && minor == 0) || (major == 1 && minor == 6) else { return false }
        let fields = UnsafeMutableRawPointer(mosq).bindMemory(to: Int32.self, capacity: 3)
        let (reader, writer) = (fields[1], fields[2])
        guard fields[0] == -1, reader >= 0, writer >= 0, reader != writer,
            isUnixStream(reader), isUnixStream(writer)
        else { return false }
        var probe: UInt8 = 0
        guard write(writer, &probe, 1) == 1, recv(reader, &probe, 1, Int32(MSG_DONTWAIT)) == 1 else { return false }
        fields[1] = -1
        fields[2] = -1
        close(reader)
        close(writer)
        return true
    }

    /// Whether this process's libmosquitto lets `detach` take the pair away, found once on a client
    /// made for the purpose. Where it does, a client of this module holds one descriptor, its socket.
    static let isDetachable: Bool = {
        MosquittoLibrary.ensureInitialised()
        guard let mosq = mosquitto_new("socket-pair-probe", true, nil) else { return false }
        defer { mosquitto_destroy(mosq) }
        return detach(from: mosq)
    }()

    private static func isUnixStream(_ fd: Int32) -> Bool {
        func option(_ name: Int32) -> Int32? {
            var value: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            return getsockopt(fd, SOL_SOCKET, name, &value, &length) == 0 ? value : nil
        }
        return option(SO_DOMAIN) == AF_UNIX && option(SO_TYPE) == Int32(SOCK_STREAM.rawValue)
    }
}
