#if canImport(Darwin)
    /// The lock of a state held for a few instructions at a time (a repeating series): ``LockedValue`` on Apple
    /// platforms, whose `os_unfair_lock` is already an inline atomic, and where `Mutex` needs
    /// macOS 15 / iOS 18.
    typealias ShortLock<Value: Sendable> = LockedValue<Value>
#else
    import Synchronization

    /// The lock of a state held for a few instructions at a time (a repeating series): the standard library's `Mutex`
    /// where it has no availability floor, whose uncontended lock and unlock are one atomic exchange each. Its
    /// contended path runs in the uninstrumented Synchronization library, so the thread sanitizer does not see it
    /// order accesses: state that threads contend for takes ``LockedValue`` (a dispatch scope's registry).
    typealias ShortLock<Value: Sendable> = Mutex<Value>
#endif
