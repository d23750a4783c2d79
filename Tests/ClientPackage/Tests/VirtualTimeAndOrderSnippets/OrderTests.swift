import TaskDispatch
import TaskDispatchTesting
import Testing

@Test func priorityOrderRunsTheHigherPriorityFirst() throws {
    let log = Log()
    let dispatcher = ManualDispatcher(order: .priority)
    dispatcher.background(priority: .background, label: "clean up") { log.append("clean up") }
    dispatcher.background(priority: .userInitiated, label: "load") { log.append("load") }

    try dispatcher.runNextBackground()
    #expect(log.values == ["load"])  // the higher priority first
}

/// Three sections, each loaded in the background and shown on the main actor.
@MainActor final class SectionsModel {
    private(set) var sections: [String] = []
    private let dispatcher: any TaskDispatcher

    init(dispatcher: any TaskDispatcher) {
        self.dispatcher = dispatcher
    }

    func refresh() {
        let dispatcher = self.dispatcher
        for name in ["news", "weather", "stocks"] {
            dispatcher.background(label: "load \(name)") {
                let section = name.uppercased()
                dispatcher.foreground(label: "show \(name)") { [weak self] in self?.sections.append(section) }
            }
        }
    }
}

@Test(arguments: 0..<100 as Range<UInt64>)
@MainActor func mergesResultsInAnyOrder(seed: UInt64) throws {
    let dispatcher = ManualDispatcher(order: .random(seed: seed))
    let model = SectionsModel(dispatcher: dispatcher)

    model.refresh()  // dispatches three loads and their deliveries
    try dispatcher.runUntilIdle()

    #expect(model.sections.count == 3, "seed \(seed)")
    try dispatcher.verifyIdle()
}

@Test(arguments: 0..<100 as Range<UInt64>)
@MainActor func mergesSectionsInAnyOrder(seed: UInt64) throws {
    let dispatcher = ManualDispatcher(order: .random(seed: seed))
    let model = SectionsModel(dispatcher: dispatcher)
    model.refresh()
    try dispatcher.runUntilIdle()
    #expect(model.sections.count == 3, "seed \(seed)")
}

@Test func aSeedsHistoryPrintsTheScheduleItRan() throws {
    let dispatcher = ManualDispatcher(order: .random(seed: 42))
    // … the scenario …
    print(dispatcher.history.map(\.description).joined(separator: "\n"))
    #expect(dispatcher.history.isEmpty)  // the scenario here is empty
}
