import TaskDispatch
import TaskDispatchTesting
import Testing

/// What a task wrote is there for the test's code after the async call that waited for it or ran it, with nothing
/// else ordering the two: the thread sanitizer (this suite runs under it in CI) reports no race on the plain
/// variables, which it did while only a continuation's resume ordered them.
@Suite(.timeLimit(.minutes(1))) struct WaitOrderingTests {
    /// A foreground task run by an async step or drain off the main actor, on the main queue.
    @Test(arguments: [false, true]) func aForegroundTasksWritesAreSeenAfterTheAsyncCall(stepping: Bool) async throws {
        for round in 1...200 {
            let dispatcher = ManualDispatcher()
            let written = UnguardedValue()
            dispatcher.foreground { written.value = round }
            if stepping { try await dispatcher.runNextForeground() } else { try await dispatcher.runUntilIdle() }
            #expect(written.value == round)
        }
    }

    /// A tracked task that writes, then dispatches what `waitForPendingTasks` waits for, from a test on the main
    /// actor and from one off it.
    @Test func aTrackedTasksWritesBeforeADispatchAreSeenAfterWaitForPendingTasks() async throws {
        try await Self.writesBeforeADispatchAreSeenAfterWaitForPendingTasks()
    }

    @MainActor @Test func aTrackedTasksWritesBeforeADispatchAreSeenOnTheMainActorAfterWaitForPendingTasks()
        async throws
    {
        try await Self.writesBeforeADispatchAreSeenAfterWaitForPendingTasks()
    }

    nonisolated(nonsending) private static func writesBeforeADispatchAreSeenAfterWaitForPendingTasks() async throws {
        for round in 1...200 {
            let dispatcher = ManualDispatcher(waitLimit: .seconds(60))
            let written = UnguardedValue()
            let task = dispatcher.startTask(label: "writes, then dispatches") { @concurrent in
                written.value = round
                try await dispatcher.runInBackground(label: "work") {}
            }
            try await dispatcher.runNext()  // its start
            try await dispatcher.waitForPendingTasks(1, in: .background)
            #expect(written.value == round)
            try await dispatcher.runUntilIdle()
            try await dispatcher.value(of: task)
        }
    }
}

/// A plain variable, for the sanitizer to watch: `@unchecked Sendable`, since only the ordering the dispatcher
/// promises keeps its writes and reads apart.
private final class UnguardedValue: @unchecked Sendable {
    var value = 0
}
