public import TaskDispatch

extension DispatcherContract {
    /// A dispatcher under test, and how the check lets its time pass.
    ///
    /// A dispatcher that runs tasks on its own threads needs nothing else: ``realTime(_:)``. A test dispatcher
    /// that holds tasks until the test runs them also needs a driver: ``manual(_:)`` for a ``ManualDispatcher``,
    /// ``init(_:runsTasksInline:now:advance:)`` for a test dispatcher of your own.
    ///
    /// ```swift
    /// try await DispatcherContract.check { .realTime(LoggingDispatcher(base: QueueDispatcher())) }
    /// try await DispatcherContract.check { .manual(ManualDispatcher()) }
    /// ```
    public struct Subject: Sendable {
        /// The dispatcher under test.
        public let dispatcher: any TaskDispatcher

        /// Whether the dispatcher runs tasks inside `dispatch(_:)` by design (as ``ManualDispatcher`` does in
        /// auto-drain mode); the ``Rule/neverInline`` rule is then skipped.
        public let runsTasksInline: Bool

        /// The `ManualDispatcher` underneath a ``manual(_:over:)`` or ``manual(_:)`` subject, for the decorator rules.
        let manualBase: ManualDispatcher?

        /// The dispatcher's time since the subject was created.
        let now: @Sendable () -> Duration

        /// Lets a duration of the dispatcher's time pass; `nil` when time passes on its own.
        let advance: (@Sendable (Duration) throws -> Void)?

        /// A dispatcher that runs its tasks on its own, in real time, such as `QueueDispatcher` or a decorator around
        /// one; a ``ManualDispatcher`` passed here is checked as ``manual(_:)`` checks it, on its virtual clock.
        ///
        /// - Parameter dispatcher: The dispatcher under test.
        /// - Returns: A subject measured on `ContinuousClock`, or on a `ManualDispatcher`'s virtual clock.
        public static func realTime(_ dispatcher: any TaskDispatcher) -> Subject {
            if let manual = dispatcher as? ManualDispatcher { return .manual(manual) }
            let start = ContinuousClock.now
            return Subject(
                dispatcher: dispatcher, runsTasksInline: false, manualBase: nil, now: { .now - start }, advance: nil)
        }

        /// A ``ManualDispatcher``, driven with ``ManualDispatcher/advance(by:)`` on its virtual clock; in auto-drain
        /// mode it runs tasks inside `dispatch(_:)` by design, so ``Rule/neverInline`` is skipped.
        ///
        /// - Parameter dispatcher: The dispatcher under test.
        /// - Returns: A subject measured on the dispatcher's virtual clock.
        public static func manual(_ dispatcher: ManualDispatcher) -> Subject {
            .manual(dispatcher, over: dispatcher)
        }

        /// A decorator over a ``ManualDispatcher``, driven through the dispatcher underneath: every rule, plus the
        /// decorator rules (``Rule/decoratorForwardsTheClock``, ``Rule/decoratorForwardsStartTask``,
        /// ``Rule/decoratorKeepsAwaitedWaits``), which check that what tests rely on reaches `base`.
        ///
        /// - Parameters:
        ///   - decorator: The dispatcher under test, which forwards to `base`.
        ///   - base: The `ManualDispatcher` the decorator forwards to.
        /// - Returns: A subject measured on `base`'s virtual clock.
        public static func manual(_ decorator: any TaskDispatcher, over base: ManualDispatcher) -> Subject {
            Subject(
                dispatcher: decorator, runsTasksInline: base.mode != .manual, manualBase: base, now: { base.now },
                advance: { try base.advance(by: $0) })
        }
    }
}

// In an extension, so that the struct keeps its memberwise initializer.
extension DispatcherContract.Subject {
    /// Creates a subject with a driver: the check calls `advance` after it dispatches each batch of tasks.
    ///
    /// - Parameters:
    ///   - dispatcher: The dispatcher under test.
    ///   - runsTasksInline: Whether `dispatch(_:)` runs tasks at once by design; skips ``Rule/neverInline``.
    ///   - now: The dispatcher's clock, read by the tasks to check that a delay is a lower bound.
    ///   - advance: Lets the given duration of the dispatcher's time pass, running every task that falls
    ///     due, including tasks those tasks dispatch. Called from a background thread, never inside a task.
    public init(
        _ dispatcher: any TaskDispatcher,
        runsTasksInline: Bool = false,
        now: @escaping @Sendable () -> Duration,
        advance: @escaping @Sendable (Duration) throws -> Void
    ) {
        self.init(dispatcher: dispatcher, runsTasksInline: runsTasksInline, manualBase: nil, now: now, advance: advance)
    }
}
