import Dispatch

/// Counts background work a production dispatcher accepted and has not finished, so callers can wait for it.
struct _BackgroundWorkTracker: Sendable {
    let group = DispatchGroup()

    init() {}

    /// Waits until every tracked task has finished or was cancelled, or until `timeout` passes.
    func wait(timeout: Duration) -> Bool {
        self.group.wait(timeout: timeout._dispatchDeadline) == .success
    }

    /// Suspends until every tracked task has finished or was cancelled.
    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            self.group.notify(queue: .global()) { continuation.resume() }
        }
    }
}
