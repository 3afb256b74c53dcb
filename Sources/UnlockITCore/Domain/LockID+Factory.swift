extension LockID {
    /// Whether the id has the form of one a factory derives from the lock's setup code: `lock-` and
    /// 32 lowercase hex digits (a salt, then a tag; LockProtocol's `FactoryID`). Such an id is
    /// registered and activated only with the setup code it was derived from.
    public var hasFactoryForm: Bool {
        let digits = rawValue.utf8.dropFirst(Self.factoryPrefix.utf8.count)
        return rawValue.hasPrefix(Self.factoryPrefix) && digits.count == Self.factorySaltDigits + Self.factoryTagDigits
            && digits.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) }
    }

    public static let factoryPrefix = "lock-"
    /// Hex digits of the id's own salt (48 bits), which keeps a guess at one lock's setup code from
    /// testing another's.
    public static let factorySaltDigits = 12
    /// Hex digits of the tag derived from the setup code and the salt (80 bits).
    public static let factoryTagDigits = 20
}
