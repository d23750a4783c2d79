import Dispatch
import TaskDispatch
import TaskDispatchTesting
import Testing

@Suite struct ManualDispatcherSteppingTests {
    @Test func dispatchOnlyRecordsTasks() {
        let dispatcher = ManualDispatcher()
        let log = EventLog()
        dispatcher.background(label: "work") { log.record("work") }
        dispatcher.foreground(label: "show") { log.record("show") }
        #expect(log.events.isEmpty)
        #expect(dispatcher.pendingTaskCount == 2)
        #expect(dispatcher.pendingTaskCount(in: .background) == 1)
        #expect(dispatcher.pendingTaskCount(in: .foreground) == 1)
    }

    @Test func runNextBackgroundRunsBackgroundTasksInDispatchOrder() throws {
        let dispatcher = ManualDispatcher()
        let log = EventLog()
        for index in 1...3 { dispatcher.background(label: "b\(index)") { log.record("b\(index)") } }
        dispatcher.foreground(label: "f") { log.record("f") }

        let first = try dispatcher.runNextBackground()
        #expect(first.task.label == "b1")
        #expect(first.task.context == .background)
        #expect(first.task.sequence == 1)
        #expect(log.events == ["b1"])
        try dispatcher.runNextBackground()
        try dispatcher.runNextBackground()
        #expect(log.events == ["b1", "b2", "b3"])
        #expect(dispatcher.pendingTaskCount(in: .foreground) == 1)
    }

    @Test @MainActor func runNextForegroundRunsForegroundTasksInOrderOnTheMainActor() throws {
        let dispatcher = ManualDispatcher()
        var seen: [Int] = []
        dispatcher.background {}
        for index in 1...3 { dispatcher.foreground { seen.append(index) } }
        for _ in 1...3 { try dispatcher.runNextForeground() }
        #expect(seen == [1, 2, 3])
        #expect(dispatcher.pendingTaskCount(in: .background) == 1)
    }

    @Test func foregroundTasksRunOnTheMainActorWhenTheTestIsNot() throws {
        let dispatcher = ManualDispatcher()
        let log = EventLog()
        dispatcher.foreground { log.record(MainQueueProbe.isOnMainQueue ? "main" : "elsewhere") }
        #expect(!MainQueueProbe.isOnMainQueue)
        try dispatcher.runNextForeground()  // hops to the main queue and waits
        #expect(log.events == ["main"])
    }

    @Test func runNextRunsTheOldestTaskOfEitherContext() throws {
        let dispatcher = ManualDispatcher()
        let log = EventLog()
        dispatcher.foreground(label: "f1") { log.record("f1") }
        dispatcher.background(label: "b1") { log.record("b1") }
        dispatcher.foreground(label: "f2") { log.record("f2") }
        #expect(try dispatcher.runNext().task.label == "f1")
        #expect(try dispatcher.runNext().task.label == "b1")
        #expect(try dispatcher.runNext().task.label == "f2")
        #expect(log.events == ["f1", "b1", "f2"])
    }

    @Test func runCurrentRunsOnlyWhatWasPendingWhenCalled() throws {
        let dispatcher = ManualDispatcher()
        let log = EventLog()
        dispatcher.background(label: "parent") {
            log.record("parent")
            dispatcher.background(label: "child") { log.record("child") }
        }
        dispatcher.background(label: "sibling") { log.record("sibling") }

        #expect(try dispatcher.runCurrent() == 2)
        #expect(log.events == ["parent", "sibling"])
        #expect(dispatcher.pendingTasks.map(\.label) == ["child"])
        #expect(try dispatcher.runCurrent() == 1)
        #expect(try dispatcher.runCurrent() == 0)
    }

    @Test func runUntilIdleRunsWhatRunningTasksDispatch() throws {
        let dispatcher = ManualDispatcher()
        let log = EventLog()
        dispatcher.background(label: "load") {
            log.record("load")
            dispatcher.background(label: "parse") {
                log.record("parse")
                dispatcher.foreground(label: "show") { log.record("show") }
            }
        }
        #expect(try dispatcher.runUntilIdle() == 3)
        #expect(log.events == ["load", "parse", "show"])
        #expect(dispatcher.pendingTaskCount == 0)
        try dispatcher.verifyIdle()
    }

    @Test func pendingTasksDescribeLabelContextCallSiteAndDueTime() throws {
        let dispatcher = ManualDispatcher()
        let line = #line + 1
        dispatcher.background(priority: .utility, label: "parse") {}
        dispatcher.foreground(after: .seconds(2)) {}
        let tasks = dispatcher.pendingTasks
        #expect(tasks.count == 2)
        let parse = try #require(tasks.first)
        #expect(parse.label == "parse")
        #expect(parse.context == .background)
        #expect(parse.priority == .utility)
        #expect(parse.callSite.description == "TaskDispatchTestingTests/ManualDispatcherSteppingTests.swift:\(line)")
        #expect(parse.dueTime == .zero)
        #expect(parse.description.contains("#1 background \"parse\" at TaskDispatchTestingTests/"))
        let later = try #require(tasks.last)
        #expect(later.label == nil)
        #expect(later.dueTime == .seconds(2))
        #expect(later.description.contains("(no label)"))
        #expect(later.description.hasSuffix("due 2 s"))
    }

    @Test func manyThreadsDispatchingLoseNothing() throws {
        let dispatcher = ManualDispatcher()
        let threads = 8
        let perThread = 2_000
        let counts = EventCounter(size: threads * perThread)
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for index in 0..<perThread {
                dispatcher.background { counts.increment(thread * perThread + index) }
            }
        }
        #expect(dispatcher.pendingTaskCount == threads * perThread)
        #expect(try dispatcher.runUntilIdle() == threads * perThread)
        #expect(counts.values.allSatisfy { $0 == 1 })
        // Sequence numbers are unique and dense.
        let sequences = Set(dispatcher.history.map(\.task.sequence))
        #expect(sequences.count == dispatcher.history.count)
    }

    @Test func tasksRunInTheSameOrderEveryRun() throws {
        func scenario() throws -> [String] {
            let dispatcher = ManualDispatcher()
            let log = EventLog()
            for index in 0..<5 {
                dispatcher.background(label: "b\(index)") {
                    log.record("b\(index)")
                    dispatcher.foreground(label: "f\(index)") { log.record("f\(index)") }
                }
            }
            try dispatcher.runUntilIdle()
            return log.events
        }
        let first = try scenario()
        #expect(try scenario() == first)
        #expect(first == ["b0", "b1", "b2", "b3", "b4", "f0", "f1", "f2", "f3", "f4"])
    }
}

/// Per-slot counters, thread-safe. `@unchecked Sendable`: `counts` is only touched while `lock` is held.
final class EventCounter: @unchecked Sendable {
    private let lock = NSLockBox()
    private var counts: [Int]

    init(size: Int) {
        self.counts = Array(repeating: 0, count: size)
    }

    func increment(_ slot: Int) {
        self.lock.withLock { self.counts[slot] += 1 }
    }

    var values: [Int] {
        self.lock.withLock { self.counts }
    }
}
