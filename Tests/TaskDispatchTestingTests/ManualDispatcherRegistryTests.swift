import TaskDispatch
import TaskDispatchTesting
import Testing

@Suite struct ManualDispatcherRegistryTests {
    @Test func tracksDispatchersCreatedInsideTheScopeOnly() throws {
        let registry = ManualDispatcherRegistry()
        let outside = ManualDispatcher()
        outside.background(label: "outside") {}
        let inside = registry.track { ManualDispatcher() }
        inside.background(label: "inside") {}
        #expect(registry.createdCount == 1)
        let failures = registry.idleFailures()
        #expect(failures.count == 1)
        #expect(failures.first?.description.contains("\"inside\"") == true)
        #expect(failures.first?.description.contains("\"outside\"") == false)
        try outside.runUntilIdle()
        try inside.runUntilIdle()
        #expect(registry.idleFailures().isEmpty)
    }

    @Test func aFailureNamesTheCreationLineAndCarriesTheFullVerifyIdleText() throws {
        let registry = ManualDispatcherRegistry()
        let (dispatcher, line) = registry.track { (ManualDispatcher(), #line) }
        dispatcher.background(label: "parse") {}
        let verifyIdleText = try #require(catchError { try dispatcher.verifyIdle() })
        let failure = try #require(registry.idleFailures().first)
        #expect(failure.createdAt == CallSite(fileID: #fileID, line: UInt(line)))
        #expect(!failure.wasReleased)
        #expect(
            failure.description
                == "ManualDispatcher created at TaskDispatchTestingTests/ManualDispatcherRegistryTests.swift:\(line) still holds work at the end of the tracked scope: \(verifyIdleText)"
        )
        #expect(throws: ManualDispatcherRegistry.IdleFailure.self) { try registry.verifyIdle() }
        try dispatcher.runUntilIdle()
        try registry.verifyIdle()
    }

    @Test func dropsDispatchersReleasedIdleAndKeepsTheOthersInCreationOrder() {
        let registry = ManualDispatcherRegistry()
        let (first, kept) = registry.track {
            let first = ManualDispatcher()
            first.background(label: "first") {}
            for _ in 0..<200 { _ = ManualDispatcher() }  // released idle: dropped as the entries grow
            let kept = ManualDispatcher()
            kept.background(label: "kept") {}
            ManualDispatcher().background(label: "released") {}  // released with work left: reported
            return (first, kept)
        }
        #expect(registry.createdCount == 203)
        let failures = registry.idleFailures()
        #expect(failures.map(\.wasReleased) == [false, false, true])
        #expect(failures.map { $0.description.contains("\"first\"") } == [true, false, false])
        #expect(failures.map { $0.description.contains("\"kept\"") } == [false, true, false])
        first.cancelAllPendingTasks()
        kept.cancelAllPendingTasks()
    }

    @Test func neverKeepsADispatcherAlive() {
        let registry = ManualDispatcherRegistry()
        weak var released: ManualDispatcher?
        registry.track {
            let dispatcher = ManualDispatcher()
            released = dispatcher
        }
        #expect(released == nil)
        #expect(registry.createdCount == 1)
        #expect(registry.idleFailures().isEmpty)
    }

    @Test func aDispatcherReleasedWithPendingTasksLeavesItsReport() throws {
        let registry = ManualDispatcherRegistry()
        let line = registry.track { () -> Int in
            let (dispatcher, line) = (ManualDispatcher(), #line)
            dispatcher.background(label: "orphan") {}
            return line
        }
        let failure = try #require(registry.idleFailures().first)
        #expect(failure.wasReleased)
        #expect(failure.createdAt.line == UInt(line))
        #expect(failure.description.contains("was released with work left"))
        #expect(failure.description.contains("\"orphan\""))
    }

    /// A pending closure that holds a handle of its own dispatcher (a debouncer's): the release cancels every pending
    /// task once its report lists them, so the closure, and what it holds, go with the dispatcher.
    @Test func aDispatcherReleasedWithAClosureHoldingItsOwnHandleLetsTheClosureGo() throws {
        final class Debouncer: @unchecked Sendable {
            var pending: TaskHandle?
            func schedule(on dispatcher: any TaskDispatcher) {
                self.pending?.cancel()
                self.pending = dispatcher.background(after: .milliseconds(300), label: "debounced") { _ = self }
            }
        }
        let registry = ManualDispatcherRegistry()
        weak var released: Debouncer?
        let handle: TaskHandle? = registry.track {
            let dispatcher = ManualDispatcher()
            let debouncer = Debouncer()
            released = debouncer
            debouncer.schedule(on: dispatcher)
            debouncer.schedule(on: dispatcher)
            return debouncer.pending
        }
        #expect(released == nil, "the pending closure outlived its dispatcher")
        #expect(handle?.isCancelled == true)
        #expect(handle?.cancel() == false, "the release had cancelled the task already")
        let failure = try #require(registry.idleFailures().first)
        #expect(failure.description.contains("1 pending task; it never ran"), "\(failure)")
        #expect(failure.description.contains("\"debounced\""))
    }

    /// A tracked task whose start was still pending when its dispatcher was released (which cancels the start) ends
    /// with `CancellationError` once it is cancelled, as one whose start the test never ran does.
    @Test(.timeLimit(.minutes(1)), arguments: [false, true])
    func aTrackedTaskWhoseStartTheReleaseCancelledEndsWhenCancelled(onMainActor: Bool) async throws {
        let registry = ManualDispatcherRegistry()
        let task = registry.track {
            let dispatcher = ManualDispatcher()
            return onMainActor
                ? dispatcher.startTask(label: "never started") { @MainActor in 42 }
                : dispatcher.startTask(label: "never started") { 42 }
        }
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(registry.idleFailures().first?.description.contains("\"never started\"") == true)
    }

    /// A release report lists the last runs, as `verifyIdle()` does: what ran before the work that was left.
    @Test func aReleaseReportListsTheLastRuns() throws {
        let registry = ManualDispatcherRegistry()
        try registry.track {
            let dispatcher = ManualDispatcher()
            dispatcher.background(label: "parse") {}
            try dispatcher.runNextBackground()
            dispatcher.foreground(label: "deliver") {}
        }
        let failure = try #require(registry.idleFailures().first)
        #expect(failure.description.contains("\"deliver\""))
        #expect(failure.description.contains("Last 1 runs, oldest first:\n  #1 background \"parse\""), "\(failure)")
    }

    /// An error one dispatcher threw does not hide another's leftover, however alike their listings read (the same
    /// label, line and sequence number): alive or released.
    @Test func anErrorOfOneDispatcherDoesNotHideTheSameListingOnAnother() async throws {
        @Sendable func leaveWork(on dispatcher: ManualDispatcher) { dispatcher.background(label: "save") {} }
        let registry = ManualDispatcherRegistry(recordsEveryFailure: true)
        let (first, second) = registry.track { (ManualDispatcher(), ManualDispatcher()) }
        registry.track { leaveWork(on: ManualDispatcher()) }  // released with the same listing
        leaveWork(on: first)
        leaveWork(on: second)
        let thrown = try #require(throws: ManualDispatcherError.self) { try first.verifyIdle() }
        let failures = await registry.idleFailuresOnceCancelledTasksEnd(besides: thrown)
        #expect(failures.map(\.wasReleased) == [false, true], "\(failures)")
        #expect(failures.allSatisfy { $0.description.contains("\"save\"") })
        #expect(await registry.idleFailuresOnceCancelledTasksEnd(besides: nil).count == 3)
    }

    @Test(.timeLimit(.minutes(1))) func aDispatcherReleasedWhileATrackedTaskRunsLeavesItsReport() async throws {
        // A tracked task does not keep its dispatcher alive. Before 1.0 the release said nothing, so a test that ended
        // with the task still running passed the idle check, and the error the task threw later was lost.
        struct Orphaned: Error {}
        let registry = ManualDispatcherRegistry()
        let (gate, opening) = AsyncStream<Void>.makeStream()
        let (task, line) = try registry.track { () throws -> (Task<Void, any Error>, Int) in
            let dispatcher = ManualDispatcher()
            let line = #line + 1
            let task = dispatcher.startTask(label: "orphan") {
                for await _ in gate {}  // a wait the dispatcher does not own
                throw Orphaned()
            }
            try dispatcher.runNext()  // its start: from here on the task runs on its own
            return (task, line)
        }

        // Checked while the task still runs: the check names it.
        let failure = try #require(registry.idleFailures().first)
        #expect(failure.wasReleased)
        #expect(
            failure.description.contains(
                "was released with work left before the end of the tracked scope: ManualDispatcher was released while tracked tasks were still running: expected every tracked task to have finished, but 1 tracked task did not: \"orphan\" started at TaskDispatchTestingTests/ManualDispatcherRegistryTests.swift:\(line)"
            ), "\(failure)")
        // Checked after it threw: the check reports the error, which the release would otherwise have lost.
        opening.finish()
        await #expect(throws: Orphaned.self) { try await task.value }
        let afterwards = try #require(registry.idleFailures().first)
        #expect(
            afterwards.description.contains(
                "ManualDispatcher was released while tracked tasks were still running: The check after the dispatcher's release found 1 error thrown by tracked tasks that nothing awaited: \"orphan\" started at TaskDispatchTestingTests/ManualDispatcherRegistryTests.swift:\(line) threw Orphaned()"
            ), "\(afterwards)")
    }

    @Test(.timeLimit(.minutes(1))) func aReleaseOnTheTrackedTaskThatIsFinishingLeavesNoReport() async throws {
        // A model the test let go, whose task takes the last reference as it ends: the task is finishing, not left
        // running.
        let registry = ManualDispatcherRegistry()
        let holder = Locked<ManualDispatcher?>(nil)
        let (gate, opening) = AsyncStream<Void>.makeStream()
        let task = try registry.track { () throws -> Task<Void, any Error> in
            let dispatcher = ManualDispatcher()
            holder.withLock { $0 = dispatcher }
            let task = dispatcher.startTask(label: "owner") {
                for await _ in gate {}
                let last = holder.withLock { held -> ManualDispatcher? in
                    defer { held = nil }
                    return held
                }
                _ = last  // released as the operation returns, before the task's end is recorded
            }
            try dispatcher.runNext()
            return task
        }
        opening.finish()
        try await task.value
        #expect(holder.withLock { $0 == nil })
        #expect(registry.idleFailures().isEmpty)
    }

    @Test func aDispatcherReleasedAfterItsTrackedTasksFinishedLeavesNoReport() async throws {
        let registry = ManualDispatcherRegistry()
        let value = try await registry.track { () async throws -> Int in
            let dispatcher = ManualDispatcher()
            let task = dispatcher.startTask(label: "done") { 42 }
            try await dispatcher.runUntilIdle()
            return try await dispatcher.value(of: task)
        }
        #expect(value == 42)
        #expect(registry.idleFailures().isEmpty)
    }

    @Test func childTasksAndUnstructuredTasksRegisterWithTheScope() async throws {
        let registry = ManualDispatcherRegistry()
        let dispatchers = await registry.track { () async -> [ManualDispatcher] in
            async let child = ManualDispatcher()
            let unstructured = await Task { ManualDispatcher() }.value
            _ = await Task.detached { ManualDispatcher() }.value  // inherits no task-local value: not tracked
            return [await child, unstructured]
        }
        #expect(registry.createdCount == 2)
        for dispatcher in dispatchers { dispatcher.background {} }
        #expect(registry.idleFailures().count == 2)
        for dispatcher in dispatchers { try await dispatcher.runUntilIdle() }
    }

    @Test func aDispatcherRegistersWithTheInnermostScopeOnly() throws {
        let outer = ManualDispatcherRegistry()
        let inner = ManualDispatcherRegistry()
        let dispatchers = outer.track {
            [ManualDispatcher(), inner.track { ManualDispatcher() }, ManualDispatcher()]
        }
        #expect(outer.createdCount == 2)
        #expect(inner.createdCount == 1)
        _ = dispatchers
    }

    @Test func parallelScopesNeverSeeEachOthersDispatchers() async throws {
        let counts = await withTaskGroup(of: (Int, Int, Int).self) { group in
            for index in 0..<32 {
                group.addTask {
                    let registry = ManualDispatcherRegistry()
                    let dispatchers = await registry.track { () async -> [ManualDispatcher] in
                        (0...index % 4).map { _ in ManualDispatcher() }
                    }
                    if index % 2 == 1 { dispatchers[0].background(label: "case \(index)") {} }
                    return (index, registry.createdCount, registry.idleFailures().count)
                }
            }
            var counts: [(Int, Int, Int)] = []
            for await count in group { counts.append(count) }
            return counts
        }
        #expect(counts.count == 32)
        for (index, created, failures) in counts {
            #expect(created == index % 4 + 1, "case \(index)")
            #expect(failures == index % 2, "case \(index)")
        }
    }

    @Test func tenThousandIdleDispatchersReportNothing() {
        let registry = ManualDispatcherRegistry()
        registry.track {
            for _ in 0..<10_000 { _ = ManualDispatcher() }
        }
        #expect(registry.createdCount == 10_000)
        #expect(registry.idleFailures().isEmpty)
    }
}

/// The description of the error `body` throws, or `nil`.
private func catchError(_ body: () throws -> Void) -> String? {
    do {
        try body()
        return nil
    } catch {
        return "\(error)"
    }
}
