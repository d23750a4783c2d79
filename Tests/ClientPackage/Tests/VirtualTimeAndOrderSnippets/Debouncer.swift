import Foundation
import TaskDispatch
import TaskDispatchTesting
import Testing

/// The article's debouncer, whole (the article leaves out the state behind the lock).
final class Debouncer: @unchecked Sendable {
    // `pending` and `deliveredTexts` are only touched while `lock` is held.
    private let lock = NSLock()
    private var pending: Task<Void, any Error>?
    private var deliveredTexts: [String] = []
    private let dispatcher: any TaskDispatcher

    init(dispatcher: any TaskDispatcher) {
        self.dispatcher = dispatcher
    }

    var delivered: [String] {
        self.lock.withLock { self.deliveredTexts }
    }

    func submit(_ text: String) -> Task<Void, any Error> {
        let task = Task {
            try await dispatcher.clock.sleep(for: .milliseconds(300))
            deliver(text)
        }
        replacePending(with: task)?.cancel()  // cancels the previous sleep and its timer
        return task
    }

    private func deliver(_ text: String) {
        self.lock.withLock { self.deliveredTexts.append(text) }
    }

    private func replacePending(with task: Task<Void, any Error>) -> Task<Void, any Error>? {
        self.lock.withLock {
            defer { self.pending = task }
            return self.pending
        }
    }
}

@Test func deliversOnlyTheLastInput() async throws {
    let dispatcher = ManualDispatcher()
    let debouncer = Debouncer(dispatcher: dispatcher)

    let first = debouncer.submit("sw")
    try await dispatcher.waitForPendingTasks(1)  // its timer
    try await dispatcher.advance(by: .milliseconds(200))
    let second = debouncer.submit("swift")
    await #expect(throws: CancellationError.self) { try await first.value }
    try await dispatcher.waitForPendingTasks(1)
    try await dispatcher.advance(by: .milliseconds(300))  // wakes "swift"
    try await second.value
    #expect(debouncer.delivered == ["swift"])
}
