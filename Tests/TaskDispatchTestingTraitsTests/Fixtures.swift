import TaskDispatchTesting

/// Code under test that creates its own dispatcher, in a file of its own beside the tests.
final class ServiceThatMakesItsOwnDispatcher: Sendable {
    static let creationLine = #line + 1
    let dispatcher = ManualDispatcher()

    func start(label: String = "service") {
        self.dispatcher.background(label: label) {}
    }
}
