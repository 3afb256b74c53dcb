import CMosquitto
import Glibc
import Synchronization

/// The OpenSSL context a TLS client hands libmosquitto (`MOSQ_OPT_SSL_CTX`, without libmosquitto's
/// defaults).
///
/// libmosquitto's own certificate check compares the certificate with the address it was given to
/// connect to, which for this client's event loop is always numeric (see ``HostResolver``): a
/// certificate for `broker.example.com` would be refused, and one for the IP address accepted for
/// any name. Here OpenSSL checks the name itself, as the context's verification parameter.
enum TLSContext {
    /// A new context (one reference, the caller's) that trusts `tls.caFile`, or the system's
    /// authorities, and accepts only a certificate naming `tls.serverName ?? host`.
    static func make(_ tls: MQTTTLS, host: String) throws(MQTTError) -> OpaquePointer {
        MosquittoLibrary.ensureInitialised()
        ERR_clear_error()
        guard let context = SSL_CTX_new(TLS_client_method()) else { throw failure("cannot create a TLS context") }
        do throws(MQTTError) {
            guard unlockit_ssl_ctx_require_tls12(context) == 1 else { throw failure("cannot require TLS 1.2") }
            SSL_CTX_set1_cert_store(context, try authorities(in: tls.caFile))
            SSL_CTX_set_verify(context, SSL_VERIFY_PEER, noteRefusal)
            let name = tls.serverName ?? host
            guard !name.isEmpty, let parameters = SSL_CTX_get0_param(context) else {
                throw failure("no name to check the broker's certificate against")
            }
            // A numeric address is matched against the certificate's IP addresses, a name against its
            // DNS names (never its subject's common name), never a wildcard standing for part of a label.
            X509_VERIFY_PARAM_set_hostflags(parameters, UInt32(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS | X509_CHECK_FLAG_NEVER_CHECK_SUBJECT))
            let named =
                HostResolver.isNumeric(name)
                ? X509_VERIFY_PARAM_set1_ip_asc(parameters, name) : X509_VERIFY_PARAM_set1_host(parameters, name, 0)
            guard named == 1 else { throw failure("\(name) cannot be checked against a certificate") }
            // The name the client asks for (SNI) is the name too, not the address; none for an address.
            if !HostResolver.isNumeric(name) {
                SSL_CTX_set_ex_data(context, serverNameIndex, strdup(name))
            }
            SSL_CTX_set_info_callback(context, askForServerName)
            return context
        } catch {
            SSL_CTX_free(context)
            throw error
        }
    }

    /// The authorities of each PEM file, and the system's (under `nil`), loaded once per process and
    /// shared by every context that trusts them: a fleet's locks all trust the same ones, and the
    /// public authorities loaded apart for each client took about 800 KiB of it (measured: 500
    /// clients, 397 MiB, with a file and with the system's alike). A process reads each file once: a
    /// client made after the file changed trusts what it held at first.
    private static let stores = Mutex<[String?: OpaquePointer]>([:])

    /// The store of `file`'s authorities, or of the system's; a context takes a reference of its own.
    private static func authorities(in file: String?) throws(MQTTError) -> OpaquePointer {
        try stores.withLock { (stores) throws(MQTTError) -> OpaquePointer in
            if let store = stores[file] { return store }
            guard let store = X509_STORE_new() else { throw failure("cannot create a certificate store") }
            let loaded = file.map { X509_STORE_load_file(store, $0) } ?? X509_STORE_set_default_paths(store)
            guard loaded == 1 else {
                X509_STORE_free(store)
                throw failure(file.map { "cannot load the certificate authorities in \($0)" } ?? "cannot load the system's certificate authorities")
            }
            stores[file] = store
            return store
        }
    }

    /// Why the last certificate check of a connection made with `context` refused the broker; `nil`
    /// if the last check accepted its certificate, or none has run. Called on the client's
    /// event-loop thread, the one the checks run on.
    static func refusal(_ context: OpaquePointer) -> String? {
        guard let stored = SSL_CTX_get_ex_data(context, refusalIndex) else { return nil }
        return String(cString: X509_verify_cert_error_string(Int(bitPattern: stored)))
    }

    /// Where a context keeps the name a client asks the broker for (a `strdup`ed C string), freed with
    /// the context.
    private static let serverNameIndex = CRYPTO_get_ex_new_index(
        CRYPTO_EX_INDEX_SSL_CTX, 0, nil, nil, nil, { _, name, _, _, _, _ in free(name) })

    /// As a handshake starts, the name asked for (Server Name Indication) becomes the client's, or
    /// none. libmosquitto sets the host it connects to, always an address here (see ``HostResolver``),
    /// which RFC 6066 does not allow, and a broker behind a proxy that routes by name would present
    /// another's certificate.
    private static let askForServerName: @convention(c) (OpaquePointer?, Int32, Int32) -> Void = { ssl, event, _ in
        guard event & SSL_CB_HANDSHAKE_START != 0, let ssl, let context = SSL_get_SSL_CTX(ssl) else { return }
        let name = SSL_CTX_get_ex_data(context, serverNameIndex)?.assumingMemoryBound(to: CChar.self)
        _ = unlockit_ssl_set_server_name(ssl, name)
    }

    /// Forgets what the last certificate check refused, as a new attempt starts.
    static func forgetRefusal(_ context: OpaquePointer) {
        SSL_CTX_set_ex_data(context, refusalIndex, nil)
    }

    /// Where a context keeps the error of the last certificate it refused, as a pointer's bits: the
    /// client reads it once the connection is gone. libmosquitto frees the connection's OpenSSL
    /// object, which also holds it, before it says the connection ended, on some of its paths.
    private static let refusalIndex = CRYPTO_get_ex_new_index(CRYPTO_EX_INDEX_SSL_CTX, 0, nil, nil, nil, nil)

    /// OpenSSL's verification, unchanged, except that its verdict is noted in the connection's
    /// context: a refusal, or, once the broker's own certificate passed, none.
    private static let noteRefusal: @convention(c) (Int32, OpaquePointer?) -> Int32 = { accepted, store in
        guard let store, let ssl = X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()),
            let context = SSL_get_SSL_CTX(OpaquePointer(ssl))
        else { return accepted }
        if accepted == 0 {
            let error = Int(X509_STORE_CTX_get_error(store))
            SSL_CTX_set_ex_data(context, refusalIndex, UnsafeMutableRawPointer(bitPattern: error))
        } else if X509_STORE_CTX_get_error_depth(store) == 0 {
            SSL_CTX_set_ex_data(context, refusalIndex, nil)
        }
        return accepted
    }

    /// `what`, and the reason OpenSSL gave for it when it gave one.
    private static func failure(_ what: String) -> MQTTError {
        let code = ERR_get_error()
        ERR_clear_error()
        guard code != 0 else { return .tls(what) }
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        let reason = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        return .tls("\(what): \(reason)")
    }
}
