import Dispatch
import TaskDispatch

/// `Thread.isMainThread` is not a reliable test on Linux: under `swift test` the main queue (and with it the main
/// actor) is drained by a thread that is not the process's main thread. A specific key set on the main queue is:
/// `DispatchQueue.getSpecific` finds it exactly when the caller runs on the main queue, which is what main-actor
/// isolation means here.
extension MainActorExecution {
    private static let key: DispatchSpecificKey<UInt8> = {
        let key = DispatchSpecificKey<UInt8>()
        DispatchQueue.main.setSpecific(key: key, value: 1)
        return key
    }()

    /// Whether the caller runs on the main queue, and so on the main actor.
    package static var isOnMainActor: Bool {
        DispatchQueue.getSpecific(key: self.key) != nil
    }

    /// Runs `work` on the main actor and returns when it has finished.
    ///
    /// Inline when the caller is already on the main actor; otherwise with `DispatchQueue.main.sync`, which
    /// blocks the caller until the main queue has run `work`.
    static func runAndWait(_ work: @MainActor @Sendable () -> Void) {
        guard !self.isOnMainActor else { return MainActor.assumeIsolated(work) }
        DispatchQueue.main.sync { MainActor.assumeIsolated(work) }
    }
}
