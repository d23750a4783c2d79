import TaskDispatch
import TaskDispatchTesting
import Testing

@MainActor
final class SearchModel {
    private(set) var searchCount = 0
    private var pending: TaskHandle?
    private let dispatcher: any TaskDispatcher
    init(dispatcher: any TaskDispatcher) { self.dispatcher = dispatcher }

    func searchTextChanged(_ text: String) {
        pending?.cancel()  // drop the previous search
        pending = dispatcher.foreground(after: .milliseconds(300), label: "search") { [weak self] in
            self?.searchCount += 1
        }
    }
}

@Test @MainActor func searchesOnceTheTypingStops() throws {
    let dispatcher = ManualDispatcher()
    let model = SearchModel(dispatcher: dispatcher)

    model.searchTextChanged("s")
    try dispatcher.advance(by: .milliseconds(200))
    model.searchTextChanged("sw")  // cancels "s"
    try dispatcher.advance(by: .milliseconds(299))
    #expect(model.searchCount == 0)  // still debouncing

    try dispatcher.advance(by: .milliseconds(1))
    #expect(model.searchCount == 1)
    try dispatcher.verifyIdle()
}

@Test @MainActor func theDebounceFiresAtThreeHundredMilliseconds() throws {
    let dispatcher = ManualDispatcher()
    let model = SearchModel(dispatcher: dispatcher)
    model.searchTextChanged("swi")  // schedules a search 300 ms later
    try dispatcher.advance(by: .milliseconds(299))
    #expect(model.searchCount == 0)  // still debouncing
    try dispatcher.advance(by: .milliseconds(1))
    #expect(model.searchCount == 1)
    #expect(dispatcher.now == .milliseconds(300))
}
