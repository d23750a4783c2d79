import TaskDispatch

/// The items `ItemsModel` loads.
func load() throws -> [String] {
    ["a", "b", "c"]
}

/// The model of the article's tracked-task example, whole (the article shows `refresh()`).
@MainActor final class ItemsModel {
    private(set) var items: [String] = []
    private let dispatcher: any TaskDispatcher

    init(dispatcher: any TaskDispatcher) {
        self.dispatcher = dispatcher
    }

    func refresh() -> Task<Void, any Error> {
        dispatcher.startTask(label: "refresh") {
            self.items = try await self.dispatcher.runInBackground(label: "load") { try load() }
        }
    }
}

enum LoadError: Error {
    case offline
}

/// Loads in the background and retries with back-off of 1 s, 2 s, 4 s on the dispatcher's clock, failing the
/// first `failures` attempts.
@MainActor final class RetryingModel {
    private(set) var items: [String] = []
    private(set) var attempts = 0
    private let dispatcher: any TaskDispatcher
    private let failures: Int

    init(dispatcher: any TaskDispatcher, failures: Int) {
        self.dispatcher = dispatcher
        self.failures = failures
    }

    @discardableResult
    func refresh() -> Task<Void, any Error> {
        dispatcher.startTask(label: "refresh") {
            var delay = Duration.seconds(1)
            while true {
                self.attempts += 1
                let failing = self.attempts <= self.failures
                do {
                    self.items = try await self.dispatcher.runInBackground(label: "load") {
                        if failing { throw LoadError.offline }
                        return try load()
                    }
                    return
                } catch is LoadError {
                    try await self.dispatcher.clock.sleep(for: delay)
                    delay *= 2
                }
            }
        }
    }
}

/// Why a feed did not load.
enum FeedError: Error, Equatable {
    case unavailable
}

let unavailable = FeedError.unavailable

/// Where `FeedModel` loads from.
struct FeedSource: Sendable {
    let load: @Sendable () throws -> [String]
}

/// A source that always fails.
let failingSource = FeedSource { throw unavailable }
let offline = failingSource

/// Loads a feed, retrying after 1 s, 2 s and 4 s on the dispatcher's clock; fails after the fourth attempt.
@MainActor final class FeedModel {
    enum State: Equatable {
        case idle
        case loaded([String])
        case failed(FeedError)
    }

    private(set) var state = State.idle
    private(set) var attempts = 0
    private let source: FeedSource
    private let dispatcher: any TaskDispatcher

    init(source: FeedSource, dispatcher: any TaskDispatcher) {
        self.source = source
        self.dispatcher = dispatcher
    }

    func refresh() -> Task<State, any Error> {
        let source = self.source
        return dispatcher.startTask(label: "refresh") {
            var delay = Duration.seconds(1)
            while true {
                self.attempts += 1
                do {
                    let items = try await self.dispatcher.runInBackground(label: "load") { try source.load() }
                    self.state = .loaded(items)
                    return self.state
                } catch let error as FeedError {
                    guard self.attempts < 4 else {
                        self.state = .failed(error)
                        return self.state
                    }
                    try await self.dispatcher.clock.sleep(for: delay)
                    delay *= 2
                }
            }
        }
    }
}
