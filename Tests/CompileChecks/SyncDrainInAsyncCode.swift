// Must NOT compile: `.ci/run` type-checks this file against the client package's build of TaskDispatchTesting and
// expects "expression is 'async' but is not marked with 'await'" on each line that ends in `// refused`, and no other
// error. In async code the compiler picks the async form of every step and drain, so a synchronous call that would
// quietly do less than it says (leave tracked tasks running, move the clock past a sleep that has not started)
// cannot be written by accident. One call per function, so that each is refused on its own.
import TaskDispatchTesting

@MainActor func refreshThenRunUntilIdle(_ dispatcher: ManualDispatcher) async throws {
    dispatcher.startTask(label: "refresh") { @MainActor in try await dispatcher.clock.sleep(for: .seconds(1)) }
    try dispatcher.runUntilIdle()  // refused
}

@MainActor func refreshThenAdvanceBy(_ dispatcher: ManualDispatcher) async throws {
    dispatcher.startTask(label: "refresh") { @MainActor in try await dispatcher.clock.sleep(for: .seconds(1)) }
    try dispatcher.advance(by: .seconds(1))  // refused
}

@MainActor func refreshThenAdvanceTo(_ dispatcher: ManualDispatcher) async throws {
    dispatcher.startTask(label: "refresh") { @MainActor in try await dispatcher.clock.sleep(for: .seconds(1)) }
    try dispatcher.advance(to: .seconds(1))  // refused
}

@MainActor func loadThenRunNextBackground(_ dispatcher: ManualDispatcher) async throws {
    dispatcher.startTask(label: "load") { _ = try await dispatcher.runInBackground(label: "parse") { 42 } }
    try dispatcher.runNextBackground()  // refused
}

@MainActor func loadThenRunNextForeground(_ dispatcher: ManualDispatcher) async throws {
    dispatcher.startTask(label: "load") { try await dispatcher.runOnMainActor(label: "show") {} }
    try dispatcher.runNextForeground()  // refused
}

@MainActor func loadThenRunNext(_ dispatcher: ManualDispatcher) async throws {
    dispatcher.startTask(label: "load") { _ = try await dispatcher.runInBackground(label: "parse") { 42 } }
    try dispatcher.runNext()  // refused
}

// The shutdown wait: in async code its blocking form, which would hold a thread and ignore cancellation, is not picked.
func shutDownWithoutAwait(_ dispatcher: QueueDispatcher) async {
    dispatcher.waitForBackgroundTasks(timeout: .seconds(5))  // refused
}

func shutDownOperationsWithoutAwait(_ dispatcher: OperationQueueDispatcher) async -> Bool {
    dispatcher.waitForBackgroundTasks(timeout: .seconds(5))  // refused
}
