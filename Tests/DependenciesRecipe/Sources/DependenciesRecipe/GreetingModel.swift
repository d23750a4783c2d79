internal import Dependencies
internal import TaskDispatch

// snippet: dependency-model
/// A model that reads its dispatcher from swift-dependencies instead of taking it in its initializer.
@MainActor
public final class GreetingModel {
    @Dependency(\.taskDispatcher) private var dispatcher

    /// The greeting shown, empty until ``load(name:)`` delivers one.
    public private(set) var greeting = ""

    /// Creates a model; the dispatcher comes from the current dependency values.
    public init() {}

    /// Composes a greeting in the background and shows it on the main actor.
    ///
    /// - Parameter name: The name to greet.
    public func load(name: String) {
        let dispatcher = self.dispatcher
        dispatcher.background(label: "compose") {
            let text = "Hello, \(name)!"
            dispatcher.foreground(label: "show") { [weak self] in self?.greeting = text }
        }
    }
}
// end-snippet
