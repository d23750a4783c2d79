import Foundation
import TaskDispatch
import TaskDispatchTesting
import Testing

@Suite struct SmokeTests {
    @Test func stepsAndErrors() throws {
        let dispatcher = ManualDispatcher()
        let log = LockedLog()
        dispatcher.background(label: "a") { log.append("a") }
        dispatcher.foreground(label: "b") { log.append("b") }
        dispatcher.background(after: .seconds(1), label: "c") { log.append("c") }
        #expect(dispatcher.pendingCount == 3)
        let error = #expect(throws: ManualDispatcherError.self) {
            try dispatcher.runNextForeground()
            try dispatcher.runNextForeground()
        }
        print(error.map { "\($0)" } ?? "-")
        try dispatcher.runUntilIdle()
        #expect(log.items == ["b", "a", "c"])
        #expect(dispatcher.now == .seconds(1))
    }
}

final class LockedLog: @unchecked Sendable {
    private let lock = NSLockish()
    private var _items: [String] = []
    func append(_ s: String) { lock.with { _items.append(s) } }
    var items: [String] { lock.with { _items } }
}
final class NSLockish: @unchecked Sendable {
    let l = NSLock()
    func with<T>(_ b: () -> T) -> T {
        l.lock()
        defer { l.unlock() }
        return b()
    }
}
