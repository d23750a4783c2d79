// The README's async, trait and contract sections, with only the imports they show.
import TaskDispatchTesting
import TaskDispatchTestingTraits
import Testing

@MainActor
final class AsyncHeadlinesModel {
    private(set) var headlines: [String] = []
    private let dispatcher: any TaskDispatcher
    init(dispatcher: any TaskDispatcher) { self.dispatcher = dispatcher }

    func refresh(_ json: String) async throws {
        let parsed = try await dispatcher.runInBackground(label: "parse") {
            json.split(separator: "\n").map(String.init)
        }
        try await dispatcher.runOnMainActor(label: "deliver") { self.headlines = parsed }
    }
}

/// A decorator a user might write: it counts dispatches and forwards them.
struct CountingDispatcher: TaskDispatcher {
    let base: any TaskDispatcher

    let clock: AnyDispatcherClock

    init(base: any TaskDispatcher) {
        self.base = base
        self.clock = AnyDispatcherClock(base.clock)
    }

    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        self.base.dispatch(task)
    }

    func startTask<Success: Sendable>(
        label: String?,
        callSite: CallSite,
        @_inheritActorContext operation: @escaping @Sendable @isolated(any) () async throws -> Success
    ) -> Task<Success, any Error> {
        self.base.startTask(label: label, callSite: callSite, operation: operation)
    }
}

@Suite(.verifiesIdleDispatchers) struct ReadmeAsyncTests {
    @Test @MainActor func refreshParsesThenDelivers() async throws {
        let dispatcher = ManualDispatcher()
        let model = AsyncHeadlinesModel(dispatcher: dispatcher)

        let refreshing = Task { try await model.refresh("One\nTwo") }
        try await dispatcher.runNextBackground()
        #expect(model.headlines.isEmpty)
        try await dispatcher.runNextForeground()
        #expect(model.headlines == ["One", "Two"])
        try await refreshing.value
        try dispatcher.verifyIdle()
    }

    @Test func aUsersDecoratorKeepsTheContract() async throws {
        try await DispatcherContract.check { .realTime(CountingDispatcher(base: QueueDispatcher())) }
    }

    /// Over a `ManualDispatcher` the check also sees that the decorator forwards the clock, startTask and waits.
    @Test func aUsersDecoratorOverAManualDispatcherKeepsTheContract() async throws {
        try await DispatcherContract.check {
            let manual = ManualDispatcher()
            return .manual(CountingDispatcher(base: manual), over: manual)
        }
    }
}

/// A debounced search, with a search engine of its own (the debounce recipe).
@MainActor
final class SearchModel {
    private let dispatcher: any TaskDispatcher
    private(set) var queries: [String] = []  // the searches that ran, oldest first
    private(set) var results: [String] = []
    private(set) var pending: Task<Void, any Error>?

    init(dispatcher: any TaskDispatcher) { self.dispatcher = dispatcher }

    func search(_ text: String) {
        pending?.cancel()
        pending = dispatcher.startTask(label: "search") {
            try await self.dispatcher.clock.sleep(for: .milliseconds(300))  // debounce on the dispatcher's clock
            self.queries.append(text)
            self.results = ["\(text) 1", "\(text) 2"]
        }
    }
}

@Suite struct ReadmeTrackedTaskTests {
    @Test @MainActor func theDebouncedSearchRunsOnTheVirtualClock() async throws {
        let dispatcher = ManualDispatcher()
        let model = SearchModel(dispatcher: dispatcher)
        model.search("swift")
        try await dispatcher.settle()  // the task starts, and sleeps 300 ms on the dispatcher's clock
        try await dispatcher.advance(by: .milliseconds(299))
        #expect(model.results.isEmpty)  // still debouncing
        try await dispatcher.advance(by: .milliseconds(1))
        #expect(model.results == ["swift 1", "swift 2"])
        try dispatcher.verifyIdle()
    }

    /// A decorator around `any TaskDispatcher` forwards the clock erased: the search still sleeps on virtual time.
    @Test @MainActor func aDecoratorForwardsTheVirtualClock() async throws {
        let dispatcher = ManualDispatcher()
        let model = SearchModel(dispatcher: CountingDispatcher(base: dispatcher))
        model.search("swift")
        try await dispatcher.advance(by: .milliseconds(299))
        #expect(model.results.isEmpty)
        try await dispatcher.advance(by: .milliseconds(1))
        #expect(model.results == ["swift 1", "swift 2"])
        try dispatcher.verifyIdle()
    }

    /// The async drain: the same search, with no stepping.
    @Test @MainActor func searchesOnceTheTypingPauses() async throws {
        let dispatcher = ManualDispatcher()
        let model = SearchModel(dispatcher: dispatcher)

        model.search("sw")
        try await dispatcher.advance(by: .milliseconds(200))
        model.search("swift")  // cancels the first search, asleep
        try await dispatcher.advance(by: .milliseconds(300))
        #expect(model.queries == ["swift"])  // "sw" never ran
        #expect(model.results == ["swift 1", "swift 2"])  // 300 ms of virtual time, microseconds of real time
        #expect(dispatcher.now == .milliseconds(500))
        try dispatcher.verifyIdle()
    }
}
