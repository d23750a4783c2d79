import Foundation
import TaskDispatch

/// An article of the feed.
struct Article: Sendable, Equatable {
    var title: String
}

/// What `parse(_:)` returns.
struct Feed: Sendable {
    var items: [Article]
}

/// The bytes of the feed, as a network call would return them.
func fetch() throws -> Data {
    Data("One\nTwo\nThree".utf8)
}

/// The articles of `data`, one a line.
func parse(_ data: Data) throws -> Feed {
    Feed(items: String(decoding: data, as: UTF8.self).split(separator: "\n").map { Article(title: String($0)) })
}

/// Where the feed comes from, as the article's test names it.
let source = "https://example.com/feed"

/// The model of the article's opening example, whole: the article shows `reload()`, which is copied here as is.
@MainActor
final class ArticlesModel {
    enum State: Equatable {
        case idle
        case loading(attempt: Int)
        case loaded
    }

    private(set) var state = State.idle
    private(set) var items: [Article] = []
    let source: String
    private let dispatcher: any TaskDispatcher

    init(source: String, dispatcher: any TaskDispatcher) {
        self.source = source
        self.dispatcher = dispatcher
    }

    func reload() async -> State {
        state = .loading(attempt: 1)
        do {
            let feed = try await dispatcher.runInBackground(label: "parse") { try parse(fetch()) }
            try await dispatcher.runOnMainActor(label: "deliver") { self.items = feed.items }
            state = .loaded  // the code after the await
        } catch {
            state = .idle  // CancellationError: the task was cancelled
        }
        return state
    }
}
