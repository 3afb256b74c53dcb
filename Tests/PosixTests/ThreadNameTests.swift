import Foundation
import Posix
import Synchronization
import Testing

@Suite struct ThreadNameTests {
    @Test func namesAreCutToFifteenBytesAtACharacterBoundary() {
        #expect(ThreadName.fitted("mqtt") == "mqtt")
        #expect(ThreadName.fitted("unlockit-mqtt-loop") == "unlockit-mqtt-l")
        // "ø" is two bytes: the fifteenth byte would split it, so it goes whole.
        #expect(ThreadName.fitted("abcdefghijklmnø") == "abcdefghijklmn")
    }

    @Test func aThreadNamesItselfInTheKernel() {
        let seen = Mutex<[String?]>([])
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            let before = ThreadName.current()
            let written = ThreadName.setCurrent("posix-test-thread-long")
            seen.withLock { $0 = [before, written ? "written" : "not written", ThreadName.current()] }
            done.signal()
        }
        thread.start()
        #expect(done.wait(timeout: .now() + 60) == .success)
        let names = seen.withLock { $0 }
        #expect(names.count == 3)
        #expect(names.first != "posix-test-thre")
        #expect(names.dropFirst().first == "written")
        #expect(names.last == "posix-test-thre")
    }
}
