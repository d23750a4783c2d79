import Dispatch

/// Running main-actor work from code that is not statically on the main actor.
package enum MainActorExecution {
    /// Runs `work`, which must be called on the main queue, without asking the runtime to check that.
    ///
    /// Called only from blocks on the main queue (directly or through `OperationQueue.main`), so the caller is on
    /// the main actor by construction; `MainActor.assumeIsolated`'s check runs in debug builds only.
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
}
