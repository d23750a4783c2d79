// Must NOT compile: `.ci/run` type-checks this file against the client package's build of TaskDispatchTesting and
// expects "expression is 'async' but is not marked with 'await'" on the drain below. In async code the compiler picks
// the async `runUntilIdle()`, so a drain that would quietly do less than it says cannot be written by accident.
import TaskDispatchTesting

@MainActor func refreshThenCheck(_ dispatcher: ManualDispatcher) async throws {
    dispatcher.startTask(label: "refresh") { @MainActor in try await dispatcher.clock.sleep(for: .seconds(1)) }
    try dispatcher.runUntilIdle()
}
