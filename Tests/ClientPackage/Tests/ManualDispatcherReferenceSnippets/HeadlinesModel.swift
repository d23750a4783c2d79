import TaskDispatch

@MainActor
final class HeadlinesModel {
    private(set) var headlines: [String] = []
    private let dispatcher: any TaskDispatcher
    init(dispatcher: any TaskDispatcher) { self.dispatcher = dispatcher }

    func refresh(_ json: String) async throws {
        let parsed = try await dispatcher.runInBackground(label: "parse") {
            json.split(separator: "\n").map(String.init)  // any thread
        }
        try await dispatcher.runOnMainActor(label: "deliver") { self.headlines = parsed }
    }
}

extension HeadlinesModel {
    /// The callback form of `refresh(_:)`, for the auto-drain example: parse in the background, deliver on the
    /// main actor.
    func show(_ json: String) {
        let dispatcher = self.dispatcher
        dispatcher.background(label: "parse") {
            let parsed = json.split(separator: "\n").map(String.init)
            dispatcher.foreground(label: "deliver") { self.headlines = parsed }
        }
    }
}
