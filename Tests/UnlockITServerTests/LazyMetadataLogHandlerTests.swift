import Foundation
import Logging
import Synchronization
import Testing
import UnlockITServer

@Suite struct LazyMetadataLogHandlerTests {
    final class Capture: TextOutputStream, @unchecked Sendable {
        private let lines = Mutex<[String]>([])
        func write(_ string: String) { lines.withLock { $0.append(string) } }
        /// Each line without its timestamp (the first field), which depends on the second it was written in.
        var written: [String] { lines.withLock { $0 }.map { String($0.drop { $0 != " " }) } }
    }

    func exercise(_ logger: inout Logger) {
        logger.logLevel = .info
        logger[metadataKey: "hb.request.id"] = "1a2b"
        logger[metadataKey: "user"] = .string("u-1")
        logger.info("unlock", metadata: ["lock": "bench-000001"])
        logger.debug("not written: below the level")
        logger[metadataKey: "user"] = nil
        logger.warning("no user now")
        logger.error("with an error", error: CocoaError(.fileNoSuchFile))
    }

    @Test func writesWhatStreamLogHandlerWrites() {
        let plain = Capture()
        let lazy = Capture()
        var expected = Logger(label: "unlockit.server") { StreamLogHandler(label: $0, stream: plain, metadataProvider: nil) }
        var actual = Logger(label: "unlockit.server") { LazyMetadataLogHandler(StreamLogHandler(label: $0, stream: lazy, metadataProvider: nil)) }
        exercise(&expected)
        exercise(&actual)
        #expect(lazy.written.count == 3)
        #expect(lazy.written == plain.written)
        #expect(lazy.written.first?.contains("hb.request.id=1a2b lock=bench-000001 user=u-1") == true)
    }

    @Test func keepsMetadataPerLoggerCopy() {
        let capture = Capture()
        var parent = Logger(label: "p") { LazyMetadataLogHandler(StreamLogHandler(label: $0, stream: capture, metadataProvider: nil)) }
        parent[metadataKey: "scope"] = "server"
        var child = parent
        child[metadataKey: "hb.request.id"] = "9"
        parent.info("parent")
        child.info("child")
        #expect(capture.written.map { $0.contains("hb.request.id") } == [false, true])
        #expect(capture.written.allSatisfy { $0.contains("scope=server") })
    }
}
