import TaskDispatch

extension AwaitableCall {
    /// The awaitable call that awaits `task`, as the dispatcher accepts it: the call in progress
    /// (``TaskTracking/dispatchingCall``) whose identity `task` carries, with the call's site and context: through
    /// any decorator that forwards, copies or rebuilds the task, or from a `Task` that inherits the call.
    static func awaiting(_ task: DispatchedTask) -> AwaitableCall? {
        guard task.awaitIdentity != 0, let call = TaskTracking.dispatchingCall, call.identity == task.awaitIdentity,
            call.callSite == task.callSite, call.context == task.context
        else { return nil }
        return call
    }

    /// The call as written, `runInBackground "parse" (Feed.swift:12)` (or `ticks` for a tick of a loop over
    /// `ticks(every:)`), whatever a decorator named or rebuilt the task.
    var description: String {
        let method = self.isTick ? "ticks" : self.context == .foreground ? "runOnMainActor" : "runInBackground"
        return describeAwaitableCall(method, self.label, self.callSite)
    }
}
