import TaskDispatchTesting
import Testing

enum LoadError: Error {
    case badData
}

@Test func aFailedLoadThrowsItsError() async throws {
    let dispatcher = ManualDispatcher()
    let task = dispatcher.startTask(label: "load") { () async throws -> Int in throw LoadError.badData }
    try await dispatcher.runUntilIdle()
    await #expect(throws: LoadError.badData) { try await dispatcher.value(of: task) }
    try dispatcher.verifyIdle()
}
