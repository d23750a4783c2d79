import TaskDispatchTesting
import Testing

@Test @MainActor func showsMatchesAfterFiltering() throws {
    let dispatcher = ManualDispatcher()
    let model = SearchModel(index: ["swift", "swiftly", "rust"], dispatcher: dispatcher)

    model.search("swift")
    #expect(model.isSearching)  // nothing has run yet

    try dispatcher.runNextBackground()  // "filter"
    #expect(model.results.isEmpty)  // filtered, not shown yet

    try dispatcher.runNextForeground()  // "show"
    #expect(model.results == ["swift", "swiftly"])
    #expect(!model.isSearching)

    try dispatcher.verifyIdle()  // no work left behind
}
