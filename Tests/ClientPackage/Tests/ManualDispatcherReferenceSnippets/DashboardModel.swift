import TaskDispatch

@MainActor
final class DashboardModel {
    private(set) var shown: [String] = []
    private let dispatcher: any TaskDispatcher

    init(dispatcher: any TaskDispatcher) {
        self.dispatcher = dispatcher
    }

    func load() -> Task<Void, any Error> {
        dispatcher.startTask(label: "dashboard") { @concurrent in  // nonisolated: its children are counted
            async let news = self.fetch("news", after: .seconds(1))
            async let weather = self.fetch("weather", after: .seconds(2))
            let shown = try await [news, weather]
            try await self.dispatcher.runOnMainActor { self.shown = shown }  // the main actor, seen
        }
    }

    nonisolated func fetch(_ name: String, after delay: Duration) async throws -> String {
        try await dispatcher.clock.sleep(for: delay)
        return try await dispatcher.runInBackground(label: name) { name }
    }
}

extension DashboardModel {
    /// The same children, started on the main actor: the drains cannot count them, and say so.
    func loadOnTheMainActor() -> Task<Void, any Error> {
        dispatcher.startTask(label: "dashboard") {
            async let news = self.fetch("news", after: .seconds(1))
            async let weather = self.fetch("weather", after: .seconds(2))
            self.shown = try await [news, weather]
        }
    }
}
