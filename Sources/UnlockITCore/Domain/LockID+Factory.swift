extension LockID {
    /// Whether the id has the form of one a factory derives from the lock's setup code: `lock-` and
    /// 20 lowercase hex digits (LockProtocol's `FactoryID`). Such an id is registered and activated
    /// only with the setup code it was derived from.
    public var hasFactoryForm: Bool {
        let digits = rawValue.utf8.dropFirst(Self.factoryPrefix.utf8.count)
        return rawValue.hasPrefix(Self.factoryPrefix) && digits.count == Self.factoryDigits
            && digits.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) }
    }

    public static let factoryPrefix = "lock-"
    /// Hex digits after the prefix: 80 bits of the derivation.
    public static let factoryDigits = 20
}
