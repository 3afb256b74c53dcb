import CMosquitto
import Glibc

/// libmosquitto's process-wide initialisation, done once, lazily and thread-safely
/// (a `static let` initialiser runs exactly once).
enum MosquittoLibrary {
    private static let initialised: Bool = {
        mosquitto_lib_init()
        // A write to a connection the broker reset raises SIGPIPE, which would end the process.
        // libmosquitto 2.0.11 ignores it as it makes a client; later versions send plain TCP with
        // MSG_NOSIGNAL instead, but OpenSSL's writes (TLS) still go through write().
        signal(SIGPIPE, SIG_IGN)
        return true
    }()

    static func ensureInitialised() { _ = initialised }

    static func describe(_ code: Int32) -> String {
        String(cString: mosquitto_strerror(code))
    }

    /// `describe`, with `MOSQ_ERR_ERRNO` told by the `errno` saved right after the failed call.
    static func describe(_ code: Int32, errno error: Int32) -> String {
        code == MOSQ_ERR_ERRNO.rawValue ? String(cString: strerror(error)) : describe(code)
    }
}
