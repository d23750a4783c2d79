#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Bionic)
    import Bionic
#endif

/// The awaitable dispatch whose `dispatch(_:)` call runs on the current thread, if any: a thread-local that
/// `AwaitedDispatch.start` sets around that call, and restores after it (so a nested call marks itself, then
/// gives the outer one back).
///
/// A task that a decorator builds anew on this thread while the mark is set is built synchronously inside that call
/// (see `AwaitableCall`). A `Task` created inside the call inherits the call's task-local, but not this mark: it
/// runs later, or on another thread. The mark is compared by identity only, never dereferenced.
package enum DispatchCallMarker {
    /// The thread-local's key; `nil` if the system refused to create one, and then nothing is ever marked.
    private static let key: pthread_key_t? = {
        var key = pthread_key_t()
        return pthread_key_create(&key, nil) == 0 ? key : nil
    }()

    /// Runs `body` with `call` marked as the dispatch call in progress on this thread.
    package static func marking<Result>(_ call: AnyObject, _ body: () -> Result) -> Result {
        guard let key = Self.key else { return body() }
        let previous = pthread_getspecific(key)
        pthread_setspecific(key, Unmanaged.passUnretained(call).toOpaque())
        defer { pthread_setspecific(key, previous) }
        return body()
    }

    /// Whether `call` is the dispatch call in progress on this thread.
    package static func isMarked(_ call: AnyObject) -> Bool {
        guard let key = Self.key, let marked = pthread_getspecific(key) else { return false }
        return marked == Unmanaged.passUnretained(call).toOpaque()
    }
}
