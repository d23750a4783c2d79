import TaskDispatch

/// The model the trait's landing page tests: "parse" in the background, then "deliver" on the main actor.
@MainActor
final class FeedModel {
    private(set) var items: [String] = []
    private(set) var isLoading = false
    private let dispatcher: any TaskDispatcher

    init(dispatcher: any TaskDispatcher) {
        self.dispatcher = dispatcher
    }

    func refresh() {
        self.isLoading = true
        let dispatcher = self.dispatcher
        dispatcher.background(label: "parse") {
            let items = "a\nb".split(separator: "\n").map(String.init)
            dispatcher.foreground(label: "deliver") { [weak self] in
                self?.items = items
                self?.isLoading = false
            }
        }
    }
}
