import Dispatch

/// Running main-actor work from code that is not statically on the main actor.
package enum MainActorExecution {
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
}
