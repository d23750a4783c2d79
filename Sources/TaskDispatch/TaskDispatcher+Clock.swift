extension TaskDispatcher where DispatcherClock == ContinuousClock {
    /// The real clock, `ContinuousClock()`: the default for every dispatcher that does not name its own.
    ///
    /// `QueueDispatcher` and `OperationQueueDispatcher` use it. A sleep on it takes real time and ends early only
    /// when its task is cancelled, as `Task.sleep` does.
    public var clock: ContinuousClock { ContinuousClock() }
}
