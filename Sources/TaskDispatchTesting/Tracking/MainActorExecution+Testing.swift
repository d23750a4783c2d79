import Dispatch
import TaskDispatch

/// `Thread.isMainThread` is not a reliable test on Linux (under `swift test` another thread drains the main queue):
/// a specific key set on the main queue is found exactly when the caller runs on the main queue, the main actor.
extension MainActorExecution {
    private static let key: DispatchSpecificKey<UInt8> = {
        let key = DispatchSpecificKey<UInt8>()
        DispatchQueue.main.setSpecific(key: key, value: 1)
        return key
    }()

    /// Whether the caller runs on the main queue, and so on the main actor.
    package static var isOnMainActor: Bool {
        DispatchQueue.getSpecific(key: self.key) != nil
    }
}
