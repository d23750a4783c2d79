import TaskDispatch

@MainActor
final class CounterModel {
    private(set) var total = 0
    private let dispatcher: any TaskDispatcher

    init(dispatcher: any TaskDispatcher) {
        self.dispatcher = dispatcher
    }

    func sum(_ numbers: [Int]) {
        let dispatcher = self.dispatcher
        dispatcher.background(label: "sum") {
            let total = numbers.reduce(0, +)  // off the main actor
            dispatcher.foreground(label: "show") { [weak self] in
                self?.total = total  // on the main actor
            }
        }
    }
}
