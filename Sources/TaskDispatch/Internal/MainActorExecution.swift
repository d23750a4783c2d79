import Dispatch

/// Running main-actor work from code that is not statically on the main actor.
///
/// `Thread.isMainThread` is not a reliable test on Linux: under `swift test` the main queue (and with it the
/// main actor) is drained by a thread that is not the process's main thread. A specific key set on the main
/// queue is: `DispatchQueue.getSpecific` finds it exactly when the caller runs on the main queue, which is
/// what main-actor isolation means here.
package enum MainActorExecution {
    private static let key: DispatchSpecificKey<UInt8> = {
        let key = DispatchSpecificKey<UInt8>()
        DispatchQueue.main.setSpecific(key: key, value: 1)
        return key
    }()

    /// Whether the caller runs on the main queue, and so on the main actor.
    package static var isOnMainActor: Bool {
        DispatchQueue.getSpecific(key: self.key) != nil
    }

    /// Runs `work`, which must be called on the main queue, without asking the runtime to check that.
    ///
    /// The production dispatchers call it only from blocks they put on the main queue (directly or through
    /// `OperationQueue.main`), where the caller is on the main actor by construction. The runtime check that
    /// `MainActor.assumeIsolated` makes costs as much as the rest of a foreground dispatch on Linux, so it
    /// runs in debug builds only, where the tests exercise it.
    @inline(__always)
    package static func runOnMainQueue(_ work: @escaping @MainActor @Sendable () -> Void) {
        #if DEBUG
            MainActor.assumeIsolated(work)
        #else
            // Sound: the caller is on the main queue, the main actor's executor. A `@MainActor` function type and
            // its nonisolated counterpart have the same representation; this is what `assumeIsolated` does after
            // its check.
            let unchecked = unsafeBitCast(work, to: (@Sendable () -> Void).self)
            unchecked()
        #endif
    }

    /// Runs `work` on the main actor and returns when it has finished.
    ///
    /// Inline when the caller is already on the main actor; otherwise with `DispatchQueue.main.sync`, which
    /// blocks the caller until the main queue has run `work`.
    package static func runAndWait(_ work: @MainActor @Sendable () -> Void) {
        if self.isOnMainActor {
            MainActor.assumeIsolated(work)
        } else {
            DispatchQueue.main.sync {
                MainActor.assumeIsolated(work)
            }
        }
    }
}
