import Dispatch

extension Duration {
    /// The duration as a Dispatch deadline from now; zero or negative durations mean now.
    var dispatchDeadline: DispatchTime {
        let (seconds, attoseconds) = self.components
        guard seconds >= 0, self > .zero else { return .now() }
        let maxSeconds = Int64(Int.max / 1_000_000_000) - 1
        guard seconds < maxSeconds else { return .distantFuture }
        let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
        return .now() + .nanoseconds(nanoseconds)
    }
}
