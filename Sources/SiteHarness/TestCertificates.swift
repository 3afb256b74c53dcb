import Foundation

/// A certificate authority of its own and a broker certificate it signed, made with the `openssl`
/// command in `directory`: what a site's operator would give `broker-setup --tls-cert/--tls-key`
/// and the locks' `--ca-file`.
public struct TestCertificates: Sendable {
    public let directory: String
    /// The authority's certificate: what a client trusts.
    public var authorityFile: String { "\(directory)/ca.pem" }
    /// The broker's certificate, for `names` (DNS names and IP addresses), and its key.
    public var certificateFile: String { "\(directory)/broker.pem" }
    public var keyFile: String { "\(directory)/broker.key" }

    /// Makes them. `names` are written into the certificate's subject alternative names, an IP
    /// address as one (`IP:`), anything else as a DNS name; `commonName` is its subject's (the first
    /// name by default).
    public static func make(
        in directory: String, names: [String] = ["localhost", "127.0.0.1"], commonName: String? = nil
    ) async throws -> TestCertificates {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let made = TestCertificates(directory: directory)
        let alternatives = names.map { name in name.allSatisfy { $0.isNumber || $0 == "." || $0 == ":" } ? "IP:\(name)" : "DNS:\(name)" }
        try "subjectAltName=\(alternatives.joined(separator: ","))\nextendedKeyUsage=serverAuth\n"
            .write(toFile: "\(directory)/broker.ext", atomically: true, encoding: .utf8)
        let curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try await openssl(
            ["req", "-x509"] + curve + [
                "-keyout", "\(directory)/ca.key", "-out", made.authorityFile, "-days", "2", "-subj", "/CN=UnlockIT test authority",
            ])
        try await openssl(
            ["req"] + curve + ["-keyout", made.keyFile, "-out", "\(directory)/broker.csr", "-subj", "/CN=\(commonName ?? names.first ?? "broker")"])
        try await openssl([
            "x509", "-req", "-in", "\(directory)/broker.csr", "-CA", made.authorityFile, "-CAkey", "\(directory)/ca.key", "-CAcreateserial",
            "-days", "2", "-extfile", "\(directory)/broker.ext", "-out", made.certificateFile,
        ])
        return made
    }

    private static func openssl(_ arguments: [String]) async throws {
        let process = try ChildProcess(try Binaries.system("openssl"), arguments, name: "openssl")
        guard try await process.waitForExit() == 0 else { throw HarnessError("openssl \(arguments.first ?? "") failed: \(process.output)") }
    }
}
