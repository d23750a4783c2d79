// Built with `.defaultIsolation(MainActor.self)`, as a new Xcode app target is: what background work calls is marked
// `nonisolated`, as the article "Getting started" says ("In a module that is main-actor by default").
import TaskDispatch
import TaskDispatchTesting
import Testing
import XCTest

/// Called from background work, so it must not be on the main actor.
nonisolated func normalized(_ names: [String]) -> [String] {
    names.map { $0.lowercased() }.sorted()
}

/// On the main actor by default.
final class NamesModel {
    private(set) var names: [String] = []
    private let dispatcher: any TaskDispatcher

    init(dispatcher: any TaskDispatcher) {
        self.dispatcher = dispatcher
    }

    func load(_ raw: [String]) {
        let dispatcher = self.dispatcher
        dispatcher.background(label: "normalize") {
            let names = normalized(raw)
            dispatcher.foreground(label: "show") { [weak self] in self?.names = names }
        }
    }
}

struct TimedOut: Error {}

/// The timeout recipe's helper, marked `nonisolated`: as a main-actor function its child tasks would not be counted.
nonisolated func withTimeout<Value: Sendable>(
    _ limit: Duration,
    on dispatcher: any TaskDispatcher,
    _ operation: @escaping @Sendable () async throws -> Value
) async throws -> Value {
    try await withThrowingTaskGroup(of: Value.self) { group in
        group.addTask { try await operation() }
        group.addTask {
            try await dispatcher.clock.sleep(for: limit)
            throw TimedOut()
        }
        defer { group.cancelAll() }
        guard let first = try await group.next() else { throw CancellationError() }
        return first
    }
}

@Test func backgroundWorkCallsANonisolatedHelper() throws {
    let dispatcher = ManualDispatcher()
    let model = NamesModel(dispatcher: dispatcher)
    model.load(["B", "A"])
    try dispatcher.runNextBackground()
    #expect(model.names.isEmpty)
    try dispatcher.runNextForeground()
    #expect(model.names == ["a", "b"])
    try dispatcher.verifyIdle()
}

@Test(arguments: 0..<5) func aNonisolatedTimeoutHelperTimesOutOnTheDispatchersClock(run: Int) async throws {
    let dispatcher = ManualDispatcher(mode: .autoAdvance)
    let task = dispatcher.startTask(label: "load") { @concurrent in
        try await withTimeout(.seconds(5), on: dispatcher) {
            try await dispatcher.runInBackground(after: .seconds(10), label: "slow fetch") { "late" }
        }
    }
    await #expect(throws: TimedOut.self) { try await dispatcher.value(of: task) }
    #expect(dispatcher.now == .seconds(5))
    try dispatcher.verifyIdle()
}

nonisolated final class NamesModelXCTests: XCTestCase {
    func testLoadShowsTheNormalizedNames() throws {
        try MainActor.assumeIsolated {
            let dispatcher = ManualDispatcher()
            let model = NamesModel(dispatcher: dispatcher)
            model.load(["B", "A"])
            try dispatcher.runUntilIdle()
            XCTAssertEqual(model.names, ["a", "b"])
            try dispatcher.verifyIdle()
        }
    }
}
