import Foundation
import TaskDispatch

/// Runs background tasks one at a time, in order, on a private serial queue.
struct SerialDispatcher: TaskDispatcher {
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
        // At most a year: `Duration` reaches far beyond what `DispatchTime` can add.
        let delay = min(max(task.delay, .zero), .seconds(365 * 86_400))
        let deadline = DispatchTime.now() + .milliseconds(Int(delay / .milliseconds(1)))
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
