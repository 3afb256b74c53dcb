/// libFuzzer target: any bytes given to the decoders of the lock protocol's messages, as a broker could
/// deliver them to the server or a lock. Nothing may crash or read out of bounds (AddressSanitizer),
/// and a message that decodes encodes to bytes that decode to the same message. Built with the
/// protocol's sources by `scripts/fuzz-codec`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMessages(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let command = try? Command.decode(bytes) {
        guard (try? Command.decode(command.encoded())) == command else { fatalError("command round trip: \(bytes)") }
    }
    if let event = try? Event.decode(bytes) {
        guard (try? Event.decode(event.encoded())) == event else { fatalError("event round trip: \(bytes)") }
    }
    if let status = try? LockStatus.decode(bytes) {
        guard (try? LockStatus.decode(status.encoded())) == status else { fatalError("status round trip: \(bytes)") }
    }
    return 0
}
