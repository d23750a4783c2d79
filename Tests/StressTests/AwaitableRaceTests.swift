import Dispatch
import Foundation
import TaskDispatch
import TaskDispatchTesting
import Testing

extension StressTests {
    /// The awaitable runs and the waiting steps under races: cancelling the awaiting task against the start of
    /// its work, and a waiter's registration, cancellation and time limit against the dispatch that wakes it.
    ///
    /// A continuation resumed twice traps (checked continuations), and one never resumed hangs the race past the
    /// suite's time limit; every race also checks its outcome against what ran.
    @Suite struct AwaitableRaces {
        /// 10,000 races per dispatcher at any scale, more when the scale asks for more.
        static let races = Swift.max(10_000, StressScale.scaled(10_000))

        @Test(.timeLimit(.minutes(10))) func queueDispatcherCancelRacingTheStartOfAnAwaitedRun() async throws {
            let dispatcher = QueueDispatcher()
            try await Self.raceCancelAgainstStart(on: dispatcher, name: "QueueDispatcher")
            #expect(dispatcher.waitForBackgroundTasks(timeout: .seconds(StressDeadline.backgroundSeconds)))
        }

        @Test(.timeLimit(.minutes(10))) func operationQueueDispatcherCancelRacingTheStartOfAnAwaitedRun() async throws {
            let dispatcher = try OperationQueueDispatcher(maxConcurrentBackgroundTasks: 2)
            try await Self.raceCancelAgainstStart(on: dispatcher, name: "OperationQueueDispatcher")
            #expect(dispatcher.waitForBackgroundTasks(timeout: .seconds(StressDeadline.backgroundSeconds)))
        }

        @Test(.timeLimit(.minutes(10))) func manualDispatcherCancelRacingADrainOfAnAwaitedRun() async throws {
            let dispatcher = ManualDispatcher(waitLimit: .seconds(StressDeadline.seconds), historyLimit: 0)
            let outcomes = AwaitedOutcomes(count: Self.races)
            for id in 0..<Self.races {
                let awaiting = Task { try await Self.awaitedRun(id, on: dispatcher, outcomes: outcomes) }
                if id % 3 != 2 {
                    // The work is pending: a drain on one thread races the cancel on another.
                    try await dispatcher.waitForPendingTasks(1)
                }
                await onDispatchThreads(2) { worker in
                    if worker == id % 2 {
                        _ = try? dispatcher.runUntilIdle()
                    } else {
                        awaiting.cancel()
                    }
                }
                outcomes.record(id, await awaiting.result)
                // Work dispatched after the drain (cancel won the race otherwise).
                _ = try await dispatcher.runUntilIdle()
            }
            let verdict = outcomes.verdict()
            #expect(verdict.violations.isEmpty, "\(verdict.violations)")
            #expect(verdict.ran + verdict.cancelled == Self.races)
            #expect(dispatcher.pendingTaskCount == 0)
            #expect(dispatcher.waiterCount == 0)
            print(
                "StressTests: ManualDispatcher awaited-run cancel races: \(Self.races) (run won \(verdict.ran), cancel won \(verdict.cancelled))"
            )
        }

        /// Races a dispatch from a Dispatch thread against a waiting step's check and registration.
        @Test(.timeLimit(.minutes(10))) func manualDispatcherDispatchRacingAWaitingStepWakesItExactlyOnce() async throws
        {
            let dispatcher = ManualDispatcher(waitLimit: .seconds(StressDeadline.seconds), historyLimit: 0)
            let ran = RunTally(count: Self.races)
            for id in 0..<Self.races {
                DispatchQueue.global().async {
                    dispatcher.background { ran.record(id) }
                }
                try await dispatcher.runNextBackground()
            }
            #expect(ran.anomalies().isEmpty, "\(ran.anomalies())")
            #expect(ran.total == Self.races)
            #expect(dispatcher.waiterCount == 0)
            try dispatcher.verifyIdle()
        }

        /// Races the cancellation of a waiting step against the dispatch that would wake it: the step either ran
        /// the task or threw `CancellationError` and left it pending, and no waiter stays behind.
        @Test(.timeLimit(.minutes(10))) func manualDispatcherCancelRacingTheWakeOfAWaitingStep() async throws {
            let dispatcher = ManualDispatcher(waitLimit: .seconds(StressDeadline.seconds), historyLimit: 0)
            let ran = RunTally(count: Self.races)
            var stepRan = 0
            var stepCancelled = 0
            var violations: [String] = []
            for id in 0..<Self.races {
                let step = Task {
                    try await dispatcher.runNextBackground()
                }
                await onDispatchThreads(2) { worker in
                    if worker == id % 2 {
                        dispatcher.background { ran.record(id) }
                    } else {
                        step.cancel()
                    }
                }
                switch await step.result {
                case .success:
                    stepRan += 1
                    if dispatcher.pendingTaskCount != 0 {
                        violations.append("race \(id): the step ran but a task is pending")
                    }
                case .failure(let error) where error is CancellationError:
                    stepCancelled += 1
                    try await dispatcher.runNextBackground()  // still pending: nothing consumed it
                case .failure(let error):
                    violations.append("race \(id): \(error)")
                }
                if dispatcher.waiterCount != 0 { violations.append("race \(id): a waiter stayed registered") }
            }
            #expect(violations.isEmpty, "\(violations.prefix(10))")
            #expect(ran.anomalies().isEmpty, "\(ran.anomalies())")
            #expect(stepRan + stepCancelled == Self.races)
            try dispatcher.verifyIdle()
            print("StressTests: waiting-step cancel races: \(Self.races) (ran \(stepRan), cancelled \(stepCancelled))")
        }

        /// Races a waiting step's time limit against the dispatch that would wake it.
        @Test(.timeLimit(.minutes(10))) func manualDispatcherTimeLimitRacingTheWakeOfAWaitingStep() async throws {
            let dispatcher = ManualDispatcher(waitLimit: .seconds(StressDeadline.seconds), historyLimit: 0)
            let rounds = StressScale.scaled(2_000)
            let ran = RunTally(count: rounds)
            var timedOut = 0
            for id in 0..<rounds {
                // The dispatch lands at varied moments around the limit: before the check, while registering, as the
                // timer fires, or after it.
                DispatchQueue.global().asyncAfter(deadline: .now() + .microseconds(id % 40)) {
                    dispatcher.background { ran.record(id) }
                }
                let limit = Duration.microseconds([0, 5, 20, 100][id % 4])
                do {
                    try await dispatcher.runNextBackground(waitingUpTo: limit)
                } catch let error as ManualDispatcherError {
                    #expect(error.kind == .waitTimedOut(after: limit))
                    timedOut += 1
                    try await dispatcher.runNextBackground()
                }
                #expect(dispatcher.waiterCount == 0)
            }
            #expect(ran.anomalies().isEmpty, "\(ran.anomalies())")
            try dispatcher.verifyIdle()
            print("StressTests: waiting-step time-limit races: \(rounds) (\(timedOut) timed out, then ran)")
        }

        // MARK: - Helpers

        /// Races the cancellation of the awaiting task against the start of its work on a production dispatcher,
        /// three ways in turn: cancelled inline right after the dispatch returned, cancelled by the test once the
        /// dispatch happened, or cancelled by the test at once (possibly before the call). A quarter of the runs
        /// go to the main actor.
        static func raceCancelAgainstStart(on base: some TaskDispatcher, name: String) async throws {
            let outcomes = AwaitedOutcomes(count: Self.races)
            for id in 0..<Self.races {
                let dispatcher = CancellingDispatcher(base: base, cancelsInline: id % 3 == 0)
                let awaiting = Task { try await Self.awaitedRun(id, on: dispatcher, outcomes: outcomes) }
                switch id % 3 {
                case 1:
                    await dispatcher.dispatched.reach(1)
                    awaiting.cancel()
                case 2:
                    awaiting.cancel()
                default:
                    break
                }
                outcomes.record(id, await awaiting.result)
            }
            let verdict = outcomes.verdict()
            #expect(verdict.violations.isEmpty, "\(verdict.violations)")
            #expect(verdict.ran + verdict.cancelled == Self.races)
            print(
                "StressTests: \(name) awaited-run cancel races: \(Self.races) (run won \(verdict.ran), cancel won \(verdict.cancelled))"
            )
        }

        /// One awaited run whose work records its start and end; every fourth goes to the main actor.
        static func awaitedRun(_ id: Int, on dispatcher: some TaskDispatcher, outcomes: AwaitedOutcomes) async throws
            -> Int
        {
            if id % 4 == 3 {
                return try await dispatcher.runOnMainActor {
                    outcomes.start(id)
                    outcomes.end(id)
                    return id
                }
            }
            return try await dispatcher.runInBackground {
                outcomes.start(id)
                outcomes.end(id)
                return id
            }
        }
    }
}

/// A decorator that reports each dispatch and, when asked, cancels the awaiting task right after it, on the
/// awaiting task's own thread, while the dispatcher's queue may already be starting the work.
struct CancellingDispatcher<Base: TaskDispatcher>: TaskDispatcher {
    let base: Base
    let cancelsInline: Bool
    let dispatched = StressArrival()

    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        let handle = self.base.dispatch(task)
        if self.cancelsInline {
            withUnsafeCurrentTask { $0?.cancel() }  // `runInBackground` dispatches from the awaiting task
        }
        self.dispatched.signal()
        return handle
    }
}

/// Counts events and lets a task suspend until a number of them has happened, without polling.
final class StressArrival: Sendable {
    private let state = Locked<(count: Int, waiters: [(Int, CheckedContinuation<Void, Never>)])>((0, []))

    func signal() {
        let ready = self.state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.count += 1
            let count = state.count
            let ready = state.waiters.filter { $0.0 <= count }.map(\.1)
            state.waiters.removeAll { $0.0 <= count }
            return ready
        }
        for continuation in ready { continuation.resume() }
    }

    func reach(_ target: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = self.state.withLock { state -> Bool in
                guard state.count < target else { return true }
                state.waiters.append((target, continuation))
                return false
            }
            if now { continuation.resume() }
        }
    }
}

/// Runs `body(worker)` for `count` workers started together on Dispatch threads, and suspends until all return.
func onDispatchThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        DispatchQueue.global().async {
            DispatchQueue.concurrentPerform(iterations: count, execute: body)
            continuation.resume()
        }
    }
}

/// What each awaited run did (started, ended) and how its await ended.
final class AwaitedOutcomes: Sendable {
    struct Slot: Sendable {
        var started = false
        var ended = false
        var outcome: String?
    }

    private let slots: Locked<[Slot]>

    init(count: Int) {
        self.slots = Locked([Slot](repeating: Slot(), count: count))
    }

    func start(_ id: Int) { self.slots.withLock { $0[id].started = true } }
    func end(_ id: Int) { self.slots.withLock { $0[id].ended = true } }

    func record(_ id: Int, _ result: Result<Int, any Error>) {
        let outcome: String =
            switch result {
            case .success(let value): value == id ? "value" : "wrong value \(value)"
            case .failure(let error) where error is CancellationError: "cancelled"
            case .failure(let error): "unexpected error \(error)"
            }
        self.slots.withLock { $0[id].outcome = outcome }
    }

    /// Runs whose work ran and returned its value, runs cancelled before their work started, and every slot
    /// that breaks "the value of work that ran to the end, or CancellationError and no work at all".
    func verdict(limit: Int = 10) -> (ran: Int, cancelled: Int, violations: [String]) {
        self.slots.withLock { slots in
            var ran = 0
            var cancelled = 0
            var violations: [String] = []
            for (id, slot) in slots.enumerated() {
                let problem: String?
                switch slot.outcome {
                case "value" where slot.started && slot.ended:
                    ran += 1
                    problem = nil
                case "cancelled" where !slot.started:
                    cancelled += 1
                    problem = nil
                default:
                    problem =
                        "run \(id): await ended with \(slot.outcome ?? "nothing"), work started \(slot.started), ended \(slot.ended)"
                }
                if let problem, violations.count < limit { violations.append(problem) }
            }
            return (ran, cancelled, violations)
        }
    }
}
