import TaskDispatch

/// A search engine that answers at once, for the debounce example.
struct SearchEngine: Sendable {
    func search(_ text: String) async throws -> [String] {
        ["\(text) 1", "\(text) 2"]
    }
}

/// The model of the debounce example, whole (the article shows `search(_:)`).
@MainActor
final class SearchModel {
    private(set) var queries: [String] = []
    private(set) var results: [String] = []
    private var pending: Task<Void, any Error>?
    private let dispatcher: any TaskDispatcher
    private let engine = SearchEngine()

    init(dispatcher: any TaskDispatcher) {
        self.dispatcher = dispatcher
    }

    func search(_ text: String) {
        pending?.cancel()
        pending = dispatcher.startTask(label: "search") {
            try await self.dispatcher.clock.sleep(for: .milliseconds(300))  // debounce on the dispatcher's clock
            self.queries.append(text)  // the searches that ran
            self.results = try await self.engine.search(text)
        }
    }
}
