import TaskDispatch

extension AwaitableCall {
    /// The awaitable call that awaits `task`, as the dispatcher accepts it: the call in progress
    /// (``TaskTracking/dispatchingCall``) if `task` is marked as awaited and has the call's site and context, and this
    /// dispatch comes from the calling task itself, synchronously inside the call, through any decorator that
    /// forwards, copies or rebuilds the task (and so may add a note of the same site, which is then bounded with it).
    /// A task dispatched from another task, such as a decorator's `Task` that inherits the call, may be another call's
    /// and carries no await.
    static func awaiting(_ task: DispatchedTask) -> AwaitableCall? {
        guard task.isAwaited, let call = TaskTracking.dispatchingCall, call.callSite == task.callSite,
            call.context == task.context, call.task == TaskTracking.currentTask
        else { return nil }
        return call
    }

    /// The call as written, `runInBackground "parse" (Feed.swift:12)`, whatever a decorator named the task.
    var description: String {
        let method = self.context == .foreground ? "runOnMainActor" : "runInBackground"
        return describeAwaitableCall(method, self.label, self.callSite)
    }
}
