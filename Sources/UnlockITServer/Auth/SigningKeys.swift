import Foundation
import UnlockITCore

/// An issuer's published keys (its JWKS) as the verifier hands them to jwt-kit: signing keys only,
/// each with the one algorithm it verifies.
///
/// jwt-kit leaves a key without `alg` open and fixes its algorithm from the header of the first
/// token that uses it: one forged token (`PS256` on an issuer's `RS256` key) would make the key check
/// every real token with the wrong algorithm. So a key gets its algorithm here, from its own `alg` or
/// its type and curve, never from a token. Keys the verifier cannot use (for encryption, of another
/// type, without a `kid`) are left out, so that one such key does not take the issuer's whole set
/// with it.
struct SigningKeys {
    /// The keys as JWKS JSON, every one with its `alg`.
    let jwks: String
    /// Each key's algorithm, by `kid`.
    let algorithms: [String: String]
    /// The keys left out, each as its `kid` (or position) and why.
    let skipped: [String]

    struct NoSigningKey: Error, CustomStringConvertible {
        let skipped: [String]
        var description: String { "no key the server can verify with (\(skipped.joined(separator: "; ")))" }
    }

    /// How many of the keys left out are named in the log.
    static let skippedListed = 10

    static func prepare(_ json: String, allowed: [String]) throws -> SigningKeys {
        guard let root = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any],
            let keys = root["keys"] as? [Any]
        else { throw NoSigningKey(skipped: ["not a JWKS document"]) }
        var kept: [[String: Any]] = []
        var algorithms: [String: String] = [:]
        var skipped: [String] = []
        for (index, entry) in keys.enumerated() {
            guard let key = entry as? [String: Any] else {
                skipped.append("#\(index): not an object")
                continue
            }
            // The provider's text, escaped: these names go into the server's log.
            let name = (key["kid"] as? String).map { "\"\(PeerText.printable($0, limit: 64))\"" } ?? "#\(index)"
            switch algorithm(of: key, allowed: allowed) {
            case .success(let alg):
                guard let kid = key["kid"] as? String, !kid.isEmpty else {
                    skipped.append("\(name): no kid")
                    continue
                }
                var signing = key
                signing["alg"] = alg
                kept.append(signing)
                algorithms[kid] = alg
            case .failure(let reason):
                skipped.append("\(name): \(reason.text)")
            }
        }
        // A set of thousands of unusable keys is named by its first few.
        if skipped.count > Self.skippedListed {
            skipped = skipped.prefix(Self.skippedListed) + ["and \(skipped.count - Self.skippedListed) more"]
        }
        guard !kept.isEmpty else { throw NoSigningKey(skipped: skipped) }
        let data = try JSONSerialization.data(withJSONObject: ["keys": kept], options: [.sortedKeys])
        return SigningKeys(jwks: String(decoding: data, as: UTF8.self), algorithms: algorithms, skipped: skipped)
    }

    /// Whether a token whose header names `alg` (and `kid`) may be checked with these keys: the key it
    /// names must be one of them and have that algorithm. A token may name none only while the set
    /// has one key (OpenID Connect Core 1.0, 10.1), which must have it: jwt-kit checks such a token
    /// with the first key it was given, which is not a choice a token should leave to it.
    func accept(alg: String, kid: String?) -> Bool {
        guard let kid else { return algorithms.count == 1 && algorithms.values.first == alg }
        return algorithms[kid] == alg
    }

    private struct Unusable: Error {
        let text: String
    }

    private static func algorithm(of key: [String: Any], allowed: [String]) -> Result<String, Unusable> {
        // The provider's words, escaped: the reasons go into the server's log.
        if let use = key["use"] as? String, use != "sig" { return .failure(Unusable(text: "for \(PeerText.printable(use)), not signing")) }
        let kty = key["kty"] as? String ?? ""
        let crv = key["crv"] as? String
        let fitting: [String]
        switch kty {
        case "RSA": fitting = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512"]
        case "EC": fitting = ["P-256": ["ES256"], "P-384": ["ES384"], "P-521": ["ES512"]][crv ?? ""] ?? []
        case "OKP": fitting = crv == "Ed25519" ? ["EdDSA"] : []
        default: return .failure(Unusable(text: "key type \(kty.isEmpty ? "missing" : PeerText.printable(kty))"))
        }
        // Its own, if it names one; else the usual one for its type (RS256 for RSA, as OpenID Connect's).
        let alg = key["alg"] as? String ?? fitting.first
        guard let alg, fitting.contains(alg) else {
            return .failure(Unusable(text: "no signing algorithm for \(kty) \(PeerText.printable(crv ?? ""))"))
        }
        guard allowed.contains(alg) else { return .failure(Unusable(text: "\(alg) is not among the issuer's algorithms")) }
        return .success(alg)
    }
}
