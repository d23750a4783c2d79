import TaskDispatch

@testable import TaskDispatchTesting

/// Draws random scenarios from a seed: the dispatcher's configuration, then each operation chosen from the
/// reference's current state, so that cancellations hit real tasks, advances land exactly on due times, and
/// delays repeat due times to stress the (due time, dispatch order) tie-break.
///
/// Three sequences in five start tracked tasks. While one of them races the test (its body runs on its own executor
/// between two awaits), the generator keeps to what the reference can predict however the race goes: the async
/// drains, which wait for it, and the async step that waits for the one dispatch it is about to make
/// (``ReferenceScheduler/admits(_:)``).
struct ModelGenerator {
    private var random: SplitMix64
    /// A second stream, for the draws of series and scopes: a sequence without them draws from ``random`` exactly
    /// what it drew before they came, so the sequences of a seed that start tracked tasks are the same operations,
    /// with a scope named on some dispatches.
    private var extras: SplitMix64
    /// Whether this sequence starts tracked tasks: never with a tiny runaway limit, where a drain stops at a count
    /// that a race would make depend on which task ran first.
    private var startsTrackedTasks = false
    /// Whether tasks cancel others as they run, and which orders the sequence uses. A sequence that starts tracked
    /// tasks keeps to dispatch order if its tasks cancel others. In a race, the due tasks a racing task's dispatch
    /// joins change what priority and random order choose next (a higher-priority background task makes priority
    /// order weigh the foreground tasks against it), and when a task that cancels another runs first, that decides
    /// what runs at all; dispatch order ranks any two tasks the same whatever else is due.
    private var cancelsWhileRunning = true
    private var ordersOtherThanDispatch = true
    /// The `DispatchScope`s of the sequence: none, one or two.
    private var scopes = 0

    init(seed: UInt64) {
        // Spread consecutive seeds apart: SplitMix64's first draws from seeds 0, 1, 2 are already independent.
        self.random = SplitMix64(seed: seed)
        self.extras = SplitMix64(seed: ~seed)
    }

    /// `body`'s draws, from ``extras``.
    private mutating func drawingExtras<Result>(_ body: (inout Self) -> Result) -> Result {
        swap(&self.random, &self.extras)
        defer { swap(&self.random, &self.extras) }
        return body(&self)
    }

    mutating func below(_ bound: Int) -> Int {
        self.random.next(below: bound)
    }

    private mutating func chance(_ percent: Int) -> Bool {
        self.below(100) < percent
    }

    private mutating func element<T>(_ choices: [T]) -> T {
        choices[self.below(choices.count)]
    }

    /// One sequence in five keeps a tiny runaway limit (0 to 4, read as at least 1) and stays manual, so that drains
    /// stop with `runawayTasks`; the others pick a mode and may switch modes later. The sequences that start no
    /// tracked tasks (those with a tiny limit, and one in four of the others) start repeating series instead, where
    /// the others started plain tasks. Two sequences in three use one or two `DispatchScope`s.
    mutating func configuration() -> ModelScenario.Configuration {
        let tinyLimit = self.chance(20)
        self.startsTrackedTasks = !tinyLimit && self.chance(75)
        if self.startsTrackedTasks {
            if self.chance(50) { self.cancelsWhileRunning = false } else { self.ordersOtherThanDispatch = false }
        }
        let configuration = ModelScenario.Configuration(
            mode: tinyLimit ? .manual : self.element([.manual, .manual, .autoDrain, .autoAdvance]),
            order: self.order(),
            runawayLimit: tinyLimit ? self.below(5) : ManualDispatcher.defaultRunawayLimit,
            historyLimit: self.element([0, 1, 3, 1_000, -1]),
            scopes: self.drawingExtras { $0.below(3) }
        )
        self.scopes = configuration.scopes
        return configuration
    }

    mutating func operation(
        for model: ReferenceScheduler,
        configuration: ModelScenario.Configuration
    ) -> ModelOperation {
        guard model.isSettled else { return self.settlingOperation(for: model) }
        let operation = self.anyOperation(for: model, configuration: configuration)
        guard !self.startsTrackedTasks || model.admits(operation) else { return self.settlingOperation(for: model) }
        // A sequence with series keeps each operation to a few hundred runs: a one-nanosecond series under a move of
        // a second would run a billion ticks, and auto-advance over a live series meets the runaway limit of 100,000
        // (which the reference does not model) when a task that never falls due is left beside it.
        guard !self.startsTrackedTasks, !model.runsFew(operation) else { return operation }
        let small: ModelOperation = .advanceBy(.nanoseconds(Int64(1 + self.drawingExtras { $0.below(3) })))
        for fallback in [small, .runCurrent] where model.runsFew(fallback) { return fallback }
        return model.mode == .manual ? .verifyIdle : .setMode(.manual)
    }

    private mutating func anyOperation(
        for model: ReferenceScheduler,
        configuration: ModelScenario.Configuration
    ) -> ModelOperation {
        let roll = self.below(100)
        switch roll {
        case 0..<30: return .dispatch(self.task(for: model, children: self.chance(25) ? 1 + self.below(3) : 0))
        case 30..<38:
            guard self.startsTrackedTasks else {
                // Half the dispatches these sequences had here, as before; the other half start a series.
                return self.drawingExtras { $0.chance(50) }
                    ? .dispatch(self.task(for: model, children: 0))
                    : .startSeries(self.drawingExtras { $0.series(for: model) })
            }
            return .startTask(self.script())
        case 38..<45:
            // Not in sequences with tracked tasks: a dispatch a cancelled scope refuses may take a sequence number,
            // which the reference then cannot tell apart from the numbers a race hands out.
            if self.scopes > 0 && !self.startsTrackedTasks, let scope = self.drawingExtras({ $0.cancelledScope() }) {
                return .cancelAll(scope: scope)
            }
            return .cancel(task: self.cancelTarget(in: model))
        case 45..<50: return .runNextForeground
        case 50..<55: return .runNextBackground
        case 55..<60: return .runNext
        case 60..<64: return .runCurrent
        case 64..<66: return .runUntilIdle
        case 66..<72: return .advanceBy(self.step(for: model))
        case 72..<75: return .advanceTo(self.instant(for: model))
        case 75..<77: return .runUntilTaskLabeled(task: self.labelTarget(in: model))
        case 77..<78: return .runUntilRunCount(max(0, model.notedRunCount + self.below(7) - 1))
        case 78..<80: return .verifyIdle
        case 80..<82:
            guard configuration.runawayLimit >= ManualDispatcher.defaultRunawayLimit else { return .runNext }
            return .setMode(self.element([.manual, .autoDrain, .autoAdvance]))
        case 82..<84: return .setOrder(self.order())
        case 84..<93: return self.asyncDrain(for: model)
        case 93..<98:
            let context = self.element([TaskContext.foreground, .background, nil])
            return .runNextAsync(context, waits: !model.dueTasks(in: context).isEmpty && self.chance(75))
        default:
            let finished = model.finishedTrackedTasks
            return finished.isEmpty ? .settle : .valueOf(task: self.element(finished))
        }
    }

    /// An operation that waits for racing tracked tasks, or whose outcome their race cannot change: mostly an async
    /// drain; the async step when a racing task's next dispatch is the only task it could run; `value(of:)` of a
    /// task that finishes on its own.
    private mutating func settlingOperation(for model: ReferenceScheduler) -> ModelOperation {
        if model.mode == .manual && self.chance(35) {
            let contexts = [nil, TaskContext.foreground, .background]
            let first = self.below(contexts.count)
            for offset in contexts.indices {
                let context = contexts[(first + offset) % contexts.count]
                if model.onlyRacingDueTask(in: context) != nil { return .runNextAsync(context, waits: true) }
            }
        }
        let finished = model.finishedTrackedTasks
        if !finished.isEmpty && self.chance(10) { return .valueOf(task: self.element(finished)) }
        for _ in 0..<3 {
            let operation = self.asyncDrain(for: model)
            if model.admits(operation) { return operation }
        }
        return .runUntilIdleAsync
    }

    private mutating func asyncDrain(for model: ReferenceScheduler) -> ModelOperation {
        switch self.below(8) {
        case 0..<3: .settle
        case 3..<5: .runUntilIdleAsync
        case 5..<7: .advanceByAsync(self.step(for: model))
        default: .advanceToAsync(self.instant(for: model))
        }
    }

    /// A tracked task's body: up to five awaits, on the global executor or (one in three) the main actor.
    private mutating func script() -> ModelTrackedScript {
        ModelTrackedScript(
            isolation: self.chance(33) ? .mainActor : .nonisolated,
            steps: (0..<self.below(6)).map { _ in
                switch self.below(10) {
                case 0..<4: .background(self.element(BackgroundPriority.allCases), after: self.awaitDelay())
                case 4..<6: .mainActor(after: self.awaitDelay())
                default: .sleep(self.sleepDuration())
                }
            }
        )
    }

    /// A series, through a scope one time in four when the sequence has scopes: intervals and first delays from small
    /// grids, so that ticks fall due with other tasks and with each other's; now and then an interval under a
    /// nanosecond, one past the clock's range, or a first delay at a pending task's due time, negative or past the
    /// clock's range.
    private mutating func series(for model: ReferenceScheduler) -> ModelSeriesSpec {
        let interval: ModelDuration =
            switch self.below(100) {
            case 0..<75: .nanoseconds(self.element([1, 2, 2, 3, 4, 5, 6]))
            case 75..<85: .nanoseconds(1_000)
            case 85..<90: .nanoseconds(0)
            case 90..<94: .nanoseconds(-3)
            case 94..<97: .longest
            default: .nanoseconds(Int64.max)
            }
        let delay: ModelDuration? =
            switch self.below(100) {
            case 0..<30: nil
            case 30..<45: .nanoseconds(0)
            case 45..<70: .nanoseconds(Int64(1 + self.below(6)))
            case 70..<80:
                {
                    let delayed = model.pending.filter { $0.due > model.now && $0.due != ReferenceScheduler.never }
                    return .nanoseconds(delayed.isEmpty ? 2 : self.element(delayed).due - model.now)
                }()
            case 80..<85: .nanoseconds(-1)
            case 85..<88: .mostNegative
            case 88..<92: .nanoseconds(1_000)
            case 92..<95: .longest
            default: .nanoseconds(max(1, ReferenceScheduler.latestTime - model.now))
            }
        return ModelSeriesSpec(
            context: self.element([.foreground, .background]),
            priority: self.element(BackgroundPriority.allCases),
            interval: interval,
            delay: delay,
            scope: self.scopes > 0 && self.chance(25) ? self.below(self.scopes) : nil
        )
    }

    /// The scope to cancel instead of a task, 8 times in 100.
    private mutating func cancelledScope() -> Int? {
        self.chance(8) ? self.below(self.scopes) : nil
    }

    /// The delay of an awaitable dispatch: mostly none, a little, or the extremes.
    private mutating func awaitDelay() -> ModelDuration {
        switch self.below(100) {
        case 0..<55: .nanoseconds(0)
        case 55..<75: .nanoseconds(Int64(1 + self.below(3)))
        case 75..<83: .nanoseconds(1_000)
        case 83..<88: .nanoseconds(-1)
        case 88..<92: .longest
        case 92..<95: .mostNegative
        default: .nanoseconds(1_000_000_000)
        }
    }

    /// How long a tracked task sleeps on the clock: a little most often, zero or less (no timer), or so long that
    /// the timer never falls due.
    private mutating func sleepDuration() -> ModelDuration {
        switch self.below(100) {
        case 0..<10: .nanoseconds(0)
        case 10..<15: .nanoseconds(-1)
        case 15..<55: .nanoseconds(Int64(1 + self.below(3)))
        case 55..<70: .nanoseconds(1_000)
        case 70..<85: .nanoseconds(1_000_000_000)
        case 85..<90: .longest
        case 90..<95: .nanoseconds(Int64.max)
        default: .mostNegative
        }
    }

    /// Dispatch and priority order twice as often as random order, which the reference can only check, not predict.
    private mutating func order() -> ManualDispatcher.Order {
        let order: ManualDispatcher.Order = self.element([
            .dispatch, .dispatch, .priority, .priority, .random(seed: UInt64(self.below(1_000))),
        ])
        return self.ordersOtherThanDispatch ? order : .dispatch
    }

    private mutating func task(for model: ReferenceScheduler, children: Int) -> ModelTaskSpec {
        var spec = ModelTaskSpec(
            context: self.element([.foreground, .background]),
            priority: self.element(BackgroundPriority.allCases),
            delay: self.delay(for: model),
            children: (0..<children).map { _ in
                ModelTaskSpec(
                    context: self.element([.foreground, .background]),
                    priority: self.element(BackgroundPriority.allCases),
                    delay: self.chance(60)
                        ? .nanoseconds(0) : self.chance(75) ? .nanoseconds(Int64(1 + self.below(3))) : .longest
                )
            }
        )
        if self.scopes > 0 { spec.scope = self.drawingExtras { $0.chance(25) ? $0.below($0.scopes) : nil } }
        // One task in six cancels another as it runs: a pending one, itself (already started), or its first child
        // (not dispatched yet, so nothing happens).
        if self.cancelsWhileRunning && self.chance(16) {
            let pending = model.pending
            switch self.below(4) {
            case 0: spec.cancels = model.nextID
            case 1: spec.cancels = model.nextID + 1
            default: spec.cancels = pending.isEmpty ? model.nextID : self.element(pending).id
            }
        }
        return spec
    }

    /// Zero most often, small and repeated delays, a delay that lands exactly on a pending task's due time, negative
    /// ones, and the ends of the clock: the last instant it can show, one past it, and `.seconds(Int64.max)`.
    private mutating func delay(for model: ReferenceScheduler) -> ModelDuration {
        let roll = self.below(100)
        let untilEnd = ReferenceScheduler.latestTime - model.now
        switch roll {
        case 0..<35: return .nanoseconds(0)
        case 35..<55: return .nanoseconds(Int64(1 + self.below(3)))
        case 55..<63: return .nanoseconds(1_000)
        case 63..<71:
            let delayed = model.pending.filter { $0.due > model.now && $0.due != ReferenceScheduler.never }
            guard !delayed.isEmpty else { return .nanoseconds(2) }
            return .nanoseconds(self.element(delayed).due - model.now)
        case 71..<74: return .nanoseconds(-1)
        case 74..<76: return .mostNegative
        case 76..<82: return .longest
        case 82..<86: return .nanoseconds(Int64.max)
        case 86..<90: return .nanoseconds(max(1, untilEnd))
        case 90..<94: return .nanoseconds(untilEnd + 1)
        default: return .nanoseconds(1_000_000_000)
        }
    }

    /// How far `advance(by:)` moves: zero, a little, exactly to the next delayed task, backwards, or past the end.
    private mutating func step(for model: ReferenceScheduler) -> ModelDuration {
        switch self.below(100) {
        case 0..<20: return .nanoseconds(0)
        case 20..<45: return .nanoseconds(Int64(1 + self.below(3)))
        case 45..<55: return .nanoseconds(1_000)
        case 55..<70: return .nanoseconds(model.nextDelayedDue.map { $0 - model.now } ?? 1)
        case 70..<75: return .nanoseconds(-1)
        case 75..<78: return .mostNegative
        case 78..<83: return .longest
        case 83..<88: return .nanoseconds(Int64.max)
        default: return .nanoseconds(1_000_000_000)
        }
    }

    /// Where `advance(to:)` goes: now, a little later, the next delayed task, backwards, or the ends of the clock.
    private mutating func instant(for model: ReferenceScheduler) -> ModelDuration {
        let now = model.now
        switch self.below(100) {
        case 0..<20: return .nanoseconds(now)
        case 20..<40:
            let (later, overflow) = now.addingReportingOverflow(Int64(1 + self.below(3)))
            return .nanoseconds(overflow ? .max : later)
        case 40..<55: return .nanoseconds(model.nextDelayedDue ?? now)
        case 55..<70: return .nanoseconds(max(0, now - 1))
        case 70..<78: return .nanoseconds(0)
        case 78..<85: return .nanoseconds(ReferenceScheduler.latestTime)
        case 85..<90: return .nanoseconds(Int64.max)
        case 90..<95: return .longest
        default: return .mostNegative
        }
    }

    /// A pending task, the task that ran last, a cancelled one (to cancel twice), or one that does not exist.
    private mutating func cancelTarget(in model: ReferenceScheduler) -> Int {
        let count = model.nextID - 1
        guard count > 0 else { return 1 }
        switch self.below(100) {
        case 0..<60:
            let pending = model.pending.filter { $0.owner == nil }
            return pending.isEmpty ? 1 + self.below(count) : self.element(pending).id
        case 60..<75:
            return model.runs.last?.task ?? 1 + self.below(count)
        case 75..<90:
            let cancelled = model.tasks.filter { $0.state == .cancelled }
            return cancelled.isEmpty ? 1 + self.below(count) : self.element(cancelled).id
        default:
            return count + 1 + self.below(3)
        }
    }

    /// A pending task, one that already ran, or a label no task has.
    private mutating func labelTarget(in model: ReferenceScheduler) -> Int {
        let pending = model.pending
        switch self.below(100) {
        case 0..<60 where !pending.isEmpty: return self.element(pending).id
        case 0..<80 where !model.runs.isEmpty: return self.element(model.runs).task
        default: return model.nextID + 1_000
        }
    }
}
