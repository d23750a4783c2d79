// The article "Repeating work and dispatch scopes": a model that refreshes every minute through a scope, released.
import TaskDispatchTesting
import Testing

protocol NewsSource: Sendable {
    func fetch() throws -> [String]
}

struct FixedNews: NewsSource {
    let headlines: [String]

    func fetch() throws -> [String] { self.headlines }
}

@MainActor final class DashboardModel {
    private let scope: DispatchScope
    private let dispatcher: any TaskDispatcher
    var headlines: [String] = []

    init(dispatcher: any TaskDispatcher, source: any NewsSource) {
        self.dispatcher = dispatcher
        self.scope = DispatchScope(dispatcher)
        scope.startTask(label: "refresh") { [weak self, dispatcher] in
            for await _ in dispatcher.ticks(every: .seconds(60), after: .zero) {
                let news = try await dispatcher.runInBackground(label: "fetch") { try source.fetch() }
                self?.headlines = news
            }
        }
    }
}

@Test @MainActor func refreshesEveryMinuteAndStopsWhenReleased() async throws {
    let dispatcher = ManualDispatcher()
    var model: DashboardModel? = DashboardModel(dispatcher: dispatcher, source: FixedNews(headlines: ["a"]))
    try await dispatcher.settle()
    #expect(model?.headlines == ["a"])
    #expect(dispatcher.pendingTasks.map(\.repeatInterval) == [.seconds(60)])
    try await dispatcher.advance(by: .seconds(60))
    #expect(dispatcher.history.filter { $0.task.label == "fetch" }.count == 2)

    model = nil  // the scope cancels the refresh task, which ends its tick loop
    try await dispatcher.settle()
    try dispatcher.verifyIdle()
}

@Test @MainActor func aPollSeriesCannotBeDrainedToIdle() throws {
    let dispatcher = ManualDispatcher()
    let poll = dispatcher.background(every: .seconds(1), label: "poll") {}
    #expect(throws: ManualDispatcherError.self) { try dispatcher.runUntilIdle() }
    poll.cancel()
    try dispatcher.verifyIdle()
}
