package import Dispatch

extension Duration {
    /// The duration from now as a Dispatch deadline: zero or negative is now, ``realTimeForever`` or more is
    /// `distantFuture`.
    ///
    /// Dispatch counts intervals in `Int`, 32 bits on a watch, so the deadline is built from whole seconds and
    /// nanoseconds (see ``realTimeComponents(as:)``), never from one nanosecond count.
    package var dispatchDeadline: DispatchTime {
        guard let (seconds, nanoseconds) = self.realTimeComponents(as: Int.self) else { return .distantFuture }
        guard seconds > 0 || nanoseconds > 0 else { return .now() }
        return .now() + .seconds(seconds) + .nanoseconds(nanoseconds)
    }
}

extension DispatchedTask {
    /// Whether the task never runs (delayed ``Duration/realTimeForever`` or more): a production dispatcher does not
    /// count it as outstanding, or a shutdown wait would wait for ever.
    @usableFromInline var neverRuns: Bool {
        self.isDelayed && self.delay >= .realTimeForever
    }

    /// Whether the task counts as a production dispatcher's outstanding background work: a background task that
    /// runs some day.
    @inlinable package var countsAsBackgroundWork: Bool {
        self.context == .background && !self.neverRuns
    }
}
