import Dispatch
import Foundation
import TaskDispatch
import TaskDispatchTesting
import Testing

/// Per-slot counters shared between the test and tasks on other threads.
///
/// `@unchecked Sendable`: every access to `slots` goes through `lock`.
final class Slots: @unchecked Sendable {
    private let lock = NSLock()
    private var slots: [Int]

    init(count: Int) {
        self.slots = Array(repeating: 0, count: count)
    }

    func increment(_ index: Int) {
        self.lock.withLock { self.slots[index] += 1 }
    }

    func append(_ value: Int) {
        self.lock.withLock { self.slots.append(value) }
    }

    var values: [Int] {
        self.lock.withLock { self.slots }
    }
}

/// The dispatchers every contract check runs against.
enum DispatcherKind: String, Sendable, CaseIterable, CustomStringConvertible {
    case queue
    case operationQueue
    case manual

    var description: String { self.rawValue }

    func makeDispatcher() -> any TaskDispatcher {
        switch self {
        case .queue: QueueDispatcher()
        case .operationQueue: OperationQueueDispatcher()
        case .manual: ManualDispatcher()
        }
    }
}

private let mainQueueKey = DispatchSpecificKey<Bool>()

/// Dispatches `count` tasks through `dispatchOne`, each of which must call `done` once, and lets them run:
/// drains a ``ManualDispatcher``; for a production dispatcher awaits (without blocking the main actor) until
/// every task called `done`.
func dispatchAndRun(
    _ dispatcher: any TaskDispatcher,
    count: Int,
    _ dispatchOne: (Int, @escaping @Sendable () -> Void) -> Void
) async throws {
    let group = DispatchGroup()
    for index in 0..<count {
        group.enter()
        dispatchOne(index) { group.leave() }
    }
    if let manual = dispatcher as? ManualDispatcher {
        try manual.runUntilIdle()
    }
    await waitUntilEmpty(group)
}

/// Awaits (never blocking the caller's thread or actor) until `group` has no entered work left.
///
/// Non-isolated on purpose: a notify closure written inside a `@MainActor` test would inherit the main actor
/// and trap when Dispatch calls it on a worker thread.
func waitUntilEmpty(_ group: DispatchGroup) async {
    await withCheckedContinuation { continuation in
        group.notify(queue: .global()) { continuation.resume() }
    }
}

@Suite struct ContractTests {
    init() {
        DispatchQueue.main.setSpecific(key: mainQueueKey, value: true)
    }

    @Test(.timeLimit(.minutes(1)), arguments: DispatcherKind.allCases)
    func runsEachBackgroundTaskExactlyOnce(kind: DispatcherKind) async throws {
        let dispatcher = kind.makeDispatcher()
        let slots = Slots(count: 500)
        try await dispatchAndRun(dispatcher, count: 500) { index, done in
            dispatcher.background {
                slots.increment(index)
                done()
            }
        }
        #expect(slots.values == Array(repeating: 1, count: 500))
    }

    @Test(.timeLimit(.minutes(1)), arguments: DispatcherKind.allCases)
    func runsForegroundTasksOnTheMainQueueInDispatchOrder(kind: DispatcherKind) async throws {
        let dispatcher = kind.makeDispatcher()
        let order = Slots(count: 0)
        let offMain = Slots(count: 1)
        try await dispatchAndRun(dispatcher, count: 200) { index, done in
            dispatcher.foreground {
                if DispatchQueue.getSpecific(key: mainQueueKey) == nil { offMain.increment(0) }
                order.append(index)
                done()
            }
        }
        #expect(order.values == Array(0..<200))
        #expect(offMain.values == [0])
    }

    /// Set only while a test is inside a `dispatch` call. A task-local value is visible to code that runs
    /// synchronously inside `withValue`, and never to a Dispatch or OperationQueue thread, so a task sees it
    /// exactly when the dispatcher ran it inline.
    @TaskLocal static var isInsideDispatch = false

    @Test(.timeLimit(.minutes(1)), arguments: DispatcherKind.allCases)
    func neverRunsATaskInline(kind: DispatcherKind) async throws {
        let dispatcher = kind.makeDispatcher()
        let ranInline = Slots(count: 2)
        try await dispatchAndRun(dispatcher, count: 2) { index, done in
            Self.$isInsideDispatch.withValue(true) {
                if index == 0 {
                    dispatcher.background {
                        if Self.isInsideDispatch { ranInline.increment(0) }
                        done()
                    }
                } else {
                    dispatcher.foreground {
                        if Self.isInsideDispatch { ranInline.increment(1) }
                        done()
                    }
                }
            }
        }
        #expect(ranInline.values == [0, 0])
    }

    /// Dispatching from the main actor: a foreground task cannot start before the dispatching code yields the
    /// main actor, so it must see a flag set right after `dispatch` returns.
    @MainActor
    @Test(.timeLimit(.minutes(1)), arguments: DispatcherKind.allCases)
    func runsAForegroundTaskOnlyAfterTheDispatchingCodeYieldsTheMainActor(kind: DispatcherKind) async throws {
        let dispatcher = kind.makeDispatcher()
        let flag = Slots(count: 1)
        let sawFlagUnset = Slots(count: 1)
        let group = DispatchGroup()
        group.enter()
        dispatcher.foreground {
            if flag.values[0] == 0 { sawFlagUnset.increment(0) }
            group.leave()
        }
        flag.increment(0)
        if let manual = dispatcher as? ManualDispatcher {
            try manual.runUntilIdle()
        }
        await waitUntilEmpty(group)
        #expect(sawFlagUnset.values == [0])
    }

    @Test(.timeLimit(.minutes(1)), arguments: DispatcherKind.allCases)
    func runsANegativeDelayNow(kind: DispatcherKind) async throws {
        let dispatcher = kind.makeDispatcher()
        let slots = Slots(count: 2)
        try await dispatchAndRun(dispatcher, count: 2) { index, done in
            if index == 0 {
                dispatcher.background(after: .milliseconds(-50)) {
                    slots.increment(0)
                    done()
                }
            } else {
                dispatcher.foreground(after: .seconds(-1)) {
                    slots.increment(1)
                    done()
                }
            }
        }
        #expect(slots.values == [1, 1])
    }

    @Test(.timeLimit(.minutes(1)), arguments: [DispatcherKind.queue, .operationQueue])
    func treatsADelayAsALowerBound(kind: DispatcherKind) async throws {
        let dispatcher = kind.makeDispatcher()
        let clock = ContinuousClock()
        let start = clock.now
        let elapsed = LockedDurations()
        try await dispatchAndRun(dispatcher, count: 2) { index, done in
            if index == 0 {
                dispatcher.background(after: .milliseconds(50)) {
                    elapsed.append(clock.now - start)
                    done()
                }
            } else {
                dispatcher.foreground(after: .milliseconds(50)) {
                    elapsed.append(clock.now - start)
                    done()
                }
            }
        }
        #expect(elapsed.values.count == 2)
        for value in elapsed.values {
            #expect(value >= .milliseconds(50))
        }
    }

    @Test func manualDispatcherRunsADelayedTaskOnlyWhenTimeReachesIt() throws {
        let dispatcher = ManualDispatcher()
        let slots = Slots(count: 1)
        dispatcher.background(after: .milliseconds(50)) { slots.increment(0) }
        try dispatcher.runCurrent()
        try dispatcher.advance(by: .milliseconds(49))
        #expect(slots.values == [0])
        try dispatcher.advance(by: .milliseconds(1))
        #expect(slots.values == [1])
    }

    @Test func manualDispatcherInAutoDrainModeRunsInline() {
        let dispatcher = ManualDispatcher(autoDrain: true)
        let slots = Slots(count: 1)
        dispatcher.background { slots.increment(0) }
        #expect(slots.values == [1])
    }

    @Test(.timeLimit(.minutes(1)), arguments: DispatcherKind.allCases)
    func neverRunsATaskCancelledBeforeItStarts(kind: DispatcherKind) async throws {
        let dispatcher = kind.makeDispatcher()
        let slots = Slots(count: 1)
        let handle = dispatcher.background(after: .milliseconds(100)) { slots.increment(0) }
        #expect(handle.cancel())
        #expect(handle.isCancelled)
        #expect(!handle.cancel())
        // A later task proves the queue moved past the cancelled one.
        try await dispatchAndRun(dispatcher, count: 1) { _, done in
            dispatcher.background(after: .milliseconds(150)) { done() }
        }
        if let manual = dispatcher as? ManualDispatcher {
            try manual.advance(by: .milliseconds(200))
        }
        #expect(slots.values == [0])
    }

    @Test(.timeLimit(.minutes(1)), arguments: DispatcherKind.allCases)
    func cannotCancelATaskThatRan(kind: DispatcherKind) async throws {
        let dispatcher = kind.makeDispatcher()
        let handles = HandleBox()
        try await dispatchAndRun(dispatcher, count: 1) { _, done in
            handles.set(dispatcher.background { done() })
        }
        let handle = try #require(handles.value)
        #expect(!handle.cancel())
        #expect(!handle.isCancelled)
    }

    @Test(.timeLimit(.minutes(1)), arguments: [DispatcherKind.queue, .operationQueue])
    func cancelRacingTheStartRunsATaskCompletelyOrNotAtAll(kind: DispatcherKind) async throws {
        let dispatcher = kind.makeDispatcher()
        let count = 2_000
        let started = Slots(count: count)
        let finished = Slots(count: count)
        let cancelled = Slots(count: count)
        let group = DispatchGroup()
        for index in 0..<count {
            group.enter()
            let handle = dispatcher.background {
                started.increment(index)
                finished.increment(index)
            }
            if handle.cancel() { cancelled.increment(index) }
            group.leave()
        }
        await waitUntilEmpty(group)
        // Wait for every task that was not cancelled to finish.
        if let queue = dispatcher as? QueueDispatcher {
            await queue.backgroundTasksFinished()
        } else if let operationQueue = dispatcher as? OperationQueueDispatcher {
            await operationQueue.backgroundTasksFinished()
        }
        let s = started.values
        let f = finished.values
        let c = cancelled.values
        for index in 0..<count {
            #expect(s[index] == f[index])
            #expect(s[index] + c[index] == 1, "task \(index): started \(s[index]), cancel returned \(c[index] == 1)")
        }
    }
}

/// Durations recorded by tasks on other threads. `@unchecked Sendable`: `lock` guards `storage`.
final class LockedDurations: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [Duration] = []

    func append(_ value: Duration) { self.lock.withLock { self.storage.append(value) } }
    var values: [Duration] { self.lock.withLock { self.storage } }
}

/// A handle stored by one thread and read by another. `@unchecked Sendable`: `lock` guards `storage`.
final class HandleBox: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: TaskHandle?

    func set(_ value: TaskHandle) { self.lock.withLock { self.storage = value } }
    var value: TaskHandle? { self.lock.withLock { self.storage } }
}
