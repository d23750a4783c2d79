import TaskDispatch

extension AwaitableCall {
    /// The awaitable call that awaits `task`, as the dispatcher accepts it: the call in progress
    /// (``TaskTracking/dispatchingCall``) whose identity `task` carries, with the call's site and context. That is
    /// the calling task's dispatch, through any decorator that forwards, copies or rebuilds the task synchronously
    /// (and so may add a note of the same site, which is then bounded with it), or a copy forwarded later from a
    /// `Task` that inherits the call. A long-lived `Task` that inherits an earlier call does not carry a later
    /// call's await: their identities differ.
    static func awaiting(_ task: DispatchedTask) -> AwaitableCall? {
        guard task.awaitIdentity != 0, let call = TaskTracking.dispatchingCall, call.identity == task.awaitIdentity,
            call.callSite == task.callSite, call.context == task.context
        else { return nil }
        return call
    }

    /// The call as written, `runInBackground "parse" (Feed.swift:12)`, whatever a decorator named the task.
    var description: String {
        let method = self.context == .foreground ? "runOnMainActor" : "runInBackground"
        return describeAwaitableCall(method, self.label, self.callSite)
    }
}
