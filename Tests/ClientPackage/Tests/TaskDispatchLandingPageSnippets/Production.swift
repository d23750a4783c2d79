import TaskDispatch
import Testing

@Test @MainActor func theAppPassesAProductionDispatcher() {
    let model = CounterModel(dispatcher: QueueDispatcher())
    #expect(model.total == 0)  // nothing summed yet
}
