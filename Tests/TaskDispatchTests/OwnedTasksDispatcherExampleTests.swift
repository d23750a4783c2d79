import Dispatch
import Foundation
import TaskDispatch
import TaskDispatchTesting
import Testing

// The "Own the cancellation state" example of the WritingYourOwnDispatcher article, compiled and checked against
// the contract: keep the two in step.

/// Runs background tasks one at a time, in order, on a private serial queue.
private struct SerialDispatcher: TaskDispatcher {
    /// One task's state: pending until it starts or is cancelled, whichever comes first.
    final class TaskState: TaskCancelling, @unchecked Sendable {
        // @unchecked Sendable: `state` is only read or written while holding `lock`.
        private enum State { case pending, started, cancelled }
        private let lock = NSLock()
        private var state = State.pending

        /// Moves the task from pending to started; `false` if it was cancelled.
        func start() -> Bool {
            lock.withLock {
                guard state == .pending else { return false }
                state = .started
                return true
            }
        }

        func cancelTask() -> Bool {
            lock.withLock {
                guard state == .pending else { return false }
                state = .cancelled
                return true
            }
        }

        var isTaskCancelled: Bool { lock.withLock { state == .cancelled } }
    }

    private let queue = DispatchQueue(label: "SerialDispatcher")

    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        let state = TaskState()
        // At most a year: `Duration` reaches far beyond what `DispatchTime` can add. Whole seconds and nanoseconds
        // of a year fit in `Int` even on a 32-bit watch, where a count of milliseconds would trap past 24.8 days.
        let delay = min(max(task.delay, .zero), .seconds(365 * 86_400))
        let (seconds, attoseconds) = delay.components
        let deadline = DispatchTime.now() + .seconds(Int(seconds)) + .nanoseconds(Int(attoseconds / 1_000_000_000))
        switch task.work {
        case .background(let work):
            queue.asyncAfter(deadline: deadline) { if state.start() { work() } }
        case .foreground(let work):
            DispatchQueue.main.asyncAfter(deadline: deadline) {
                if state.start() { MainActor.assumeIsolated(work) }
            }
        }
        return TaskHandle(canceller: state)
    }
}

@Suite(.timeLimit(.minutes(3))) struct OwnedTasksDispatcherExampleTests {
    @Test func theArticlesDispatcherKeepsTheContract() async throws {
        try await DispatcherContract.check { .realTime(SerialDispatcher()) }
    }

    @Test func aHandleCancelsItsOwnTaskOnly() {
        let dispatcher = SerialDispatcher()
        let first = dispatcher.background(after: .seconds(3_600)) {}
        let second = dispatcher.background(after: .seconds(3_600)) {}
        #expect(first.cancel())
        #expect(first.isCancelled)
        #expect(!second.isCancelled)
        #expect(second.cancel())
        #expect(!second.cancel())  // once
    }
}
