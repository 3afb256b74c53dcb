import Foundation

/// libFuzzer target: whatever the protocol's JSON reader accepts, Foundation's `JSONSerialization`
/// accepts too, with the same keys, and the same strings, integers and booleans for keys that occur
/// once (the reader's promise: "what it accepts any JSON parser would"). Built with the reader's own
/// source by `scripts/fuzz-codec`, under AddressSanitizer, so an out-of-bounds read fails as well.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFlatJSON(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let members = try? FlatJSON.parse(bytes) else { return 0 }
    guard let object = (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any] else {
        fatalError("accepted what Foundation refuses: \(bytes)")
    }
    var counts: [String: Int] = [:]
    for member in members { counts[member.key, default: 0] += 1 }
    guard Set(counts.keys) == Set(object.keys) else { fatalError("other keys than Foundation's: \(bytes)") }
    for (key, value) in members where counts[key] == 1 {
        let theirs = object[key]!
        switch value {
        case .string(let text):
            guard theirs as? String == text else { fatalError("string \(key) differs: \(bytes)") }
        case .integer(let number):
            guard let other = theirs as? NSNumber, other.int64Value == Int64(number), "\(other)" == "\(number)" else {
                fatalError("integer \(key) differs: \(bytes)")
            }
        case .bool(let flag):
            guard theirs as? Bool == flag else { fatalError("boolean \(key) differs: \(bytes)") }
        case .other:
            break
        }
    }
    return 0
}
