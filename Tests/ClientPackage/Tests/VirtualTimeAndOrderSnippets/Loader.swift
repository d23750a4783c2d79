import TaskDispatch
import TaskDispatchTesting
import Testing

final class Loader: Sendable {
    let attempts = Counter()  // a small lock-protected counter
    private let dispatcher: any TaskDispatcher
    private let load: @Sendable () -> Bool
    init(dispatcher: any TaskDispatcher, load: @escaping @Sendable () -> Bool) {
        self.dispatcher = dispatcher
        self.load = load
    }

    func start(attempt: Int = 0) {
        dispatcher.background(after: attempt == 0 ? .zero : .seconds(1 << (attempt - 1)), label: "load") {
            self.attempts.add(1)
            if !self.load() && attempt < 3 { self.start(attempt: attempt + 1) }
        }
    }
}

@Test func backsOffOneTwoFourSeconds() throws {
    let dispatcher = ManualDispatcher()
    let loader = Loader(dispatcher: dispatcher, load: { false })  // always fails

    loader.start()
    try dispatcher.runNextBackground()  // attempt 1, at 0 s
    try dispatcher.advance(by: .milliseconds(999))
    #expect(loader.attempts.value == 1)  // not yet
    try dispatcher.advance(by: .milliseconds(1))  // 1 s
    #expect(loader.attempts.value == 2)
    try dispatcher.advance(to: .seconds(3))  // 1 s + 2 s
    #expect(loader.attempts.value == 3)
    try dispatcher.advance(to: .seconds(7))  // + 4 s
    #expect(loader.attempts.value == 4)
    try dispatcher.verifyIdle()  // gave up after three retries
    #expect(dispatcher.history.map(\.startTime) == [.zero, .seconds(1), .seconds(3), .seconds(7)])
}
