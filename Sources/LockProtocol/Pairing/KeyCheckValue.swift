/// The key check value: the first three bytes of `AES-ECB(K, 0¹²⁸)`.
///
/// It lets the server confirm it unwrapped the right key without the key ever being sent.
public enum KeyCheckValue {
    public static let length = 3

    public static func of(_ key: Key128) -> [UInt8] {
        Array(AES128.encrypt(.zero, key: key).bytes.prefix(length))
    }
}
