import TaskDispatch

@testable import TaskDispatchTesting

/// Draws random scenarios from a seed: the dispatcher's configuration, then each operation chosen from the
/// reference's current state, so that cancellations hit real tasks, advances land exactly on due times, and
/// delays repeat due times to stress the (due time, dispatch order) tie-break.
struct ModelGenerator {
    private var random: SplitMix64

    init(seed: UInt64) {
        // Spread consecutive seeds apart: SplitMix64's first draws from seeds 0, 1, 2 are already independent.
        self.random = SplitMix64(seed: seed)
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
    /// stop with `runawayTasks`; the others pick a mode and may switch modes later.
    mutating func configuration() -> ModelScenario.Configuration {
        let tinyLimit = self.chance(20)
        return ModelScenario.Configuration(
            mode: tinyLimit ? .manual : self.element([.manual, .manual, .autoDrain, .autoAdvance]),
            order: self.order(),
            runawayLimit: tinyLimit ? self.below(5) : ManualDispatcher.defaultRunawayLimit,
            historyLimit: self.element([0, 1, 3, 1_000, -1])
        )
    }

    mutating func operation(
        for model: ReferenceScheduler,
        configuration: ModelScenario.Configuration
    ) -> ModelOperation {
        let roll = self.below(100)
        switch roll {
        case 0..<37: return .dispatch(self.task(for: model, children: self.chance(25) ? 1 + self.below(3) : 0))
        case 37..<46: return .cancel(task: self.cancelTarget(in: model))
        case 46..<52: return .runNextForeground
        case 52..<58: return .runNextBackground
        case 58..<65: return .runNext
        case 65..<70: return .runCurrent
        case 70..<73: return .runUntilIdle
        case 73..<82: return .advanceBy(self.step(for: model))
        case 82..<87: return .advanceTo(self.instant(for: model))
        case 87..<90: return .runUntilTaskLabeled(task: self.labelTarget(in: model))
        case 90..<92: return .runUntilRunCount(max(0, model.runs.count + self.below(7) - 1))
        case 92..<94: return .verifyIdle
        case 94..<97:
            guard configuration.runawayLimit >= ManualDispatcher.defaultRunawayLimit else { return .runNext }
            return .setMode(self.element([.manual, .autoDrain, .autoAdvance]))
        default: return .setOrder(self.order())
        }
    }

    /// Dispatch and priority order twice as often as random order, which the reference can only check, not predict.
    private mutating func order() -> ManualDispatcher.Order {
        self.element([.dispatch, .dispatch, .priority, .priority, .random(seed: UInt64(self.below(1_000)))])
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
        // One task in six cancels another as it runs: a pending one, itself (already started), or its first child
        // (not dispatched yet, so nothing happens).
        if self.chance(16) {
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
            let pending = model.pending
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
