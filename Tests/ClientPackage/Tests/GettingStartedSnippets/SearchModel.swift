import TaskDispatch

@MainActor
final class SearchModel {
    private(set) var results: [String] = []
    private(set) var isSearching = false
    private let dispatcher: any TaskDispatcher
    private let index: [String]

    init(index: [String], dispatcher: any TaskDispatcher) {
        self.index = index
        self.dispatcher = dispatcher
    }

    func search(_ text: String) {
        self.isSearching = true
        let (dispatcher, index) = (self.dispatcher, self.index)
        dispatcher.background(priority: .userInitiated, label: "filter") {
            let matches = index.filter { $0.contains(text) }  // any thread
            dispatcher.foreground(label: "show") { [weak self] in  // the main actor
                self?.results = matches
                self?.isSearching = false
            }
        }
    }
}
