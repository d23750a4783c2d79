#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Bionic)
    import Bionic
#else
    #error("TaskDispatch needs a platform lock: Darwin, Glibc, Musl or Bionic.")
#endif

#if canImport(Darwin)
    typealias LockPrimitive = os_unfair_lock
#else
    typealias LockPrimitive = pthread_mutex_t
#endif

// The standard library's `Mutex` needs macOS 15 / iOS 18; this package deploys further back, so it keeps one
// small lock of its own (as swift-nio and swift-async-algorithms do). A lock lives as the single tail element
// of a `ManagedBuffer` whose header is the state it guards, so state and lock cost one allocation.
extension ManagedBuffer where Element == LockPrimitive {
    /// Initializes the tail-allocated lock. Call once, right after `create`.
    @inline(__always)
    func initializeLock(spinning: Bool = false) {
        self.withUnsafeMutablePointerToElements { lock in
            #if canImport(Darwin)
                lock.initialize(to: os_unfair_lock())
            #else
                lock.initialize(to: pthread_mutex_t())
                let result: Int32
                #if canImport(Glibc)
                    if spinning {
                        var attributes = pthread_mutexattr_t()
                        pthread_mutexattr_init(&attributes)
                        pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ADAPTIVE_NP))
                        result = pthread_mutex_init(lock, &attributes)
                        pthread_mutexattr_destroy(&attributes)
                    } else {
                        result = pthread_mutex_init(lock, nil)
                    }
                #else
                    result = pthread_mutex_init(lock, nil)
                #endif
                precondition(result == 0, "pthread_mutex_init failed with \(result)")
            #endif
        }
    }

    /// Destroys the lock and the header. Call from `deinit` only.
    @inline(__always)
    func destroyLock() {
        self.withUnsafeMutablePointerToElements { lock in
            #if !canImport(Darwin)
                pthread_mutex_destroy(lock)
            #endif
            // `_ =`: on Darwin this is the closure's only statement, and without it the closure would return the
            // pointer `deinitialize` gives back, leaving the call's result unused (a warning there).
            _ = lock.deinitialize(count: 1)
        }
    }

    /// Runs `body` with exclusive access to the header.
    @inline(__always)
    func withLock<Result>(_ body: (inout Header) throws -> Result) rethrows -> Result {
        try self.withUnsafeMutablePointers { header, lock in
            #if canImport(Darwin)
                os_unfair_lock_lock(lock)
                defer { os_unfair_lock_unlock(lock) }
            #else
                pthread_mutex_lock(lock)
                defer { pthread_mutex_unlock(lock) }
            #endif
            return try body(&header.pointee)
        }
    }
}

/// A value guarded by a platform lock stored in the same allocation.
///
/// `@unchecked Sendable`: the value (the buffer's header) is touched only inside ``withLock(_:)``; the lock is set
/// up before the box is shared and destroyed in `deinit`, when no other reference exists. (`ManagedBuffer` is not
/// `Sendable`, so the box is a struct around it, as in swift-nio.)
package struct LockedValue<Value: Sendable>: @unchecked Sendable {
    private final class Storage: ManagedBuffer<Value, LockPrimitive> {
        deinit {
            self.destroyLock()
        }
    }

    private let storage: Storage

    /// Creates a lock guarding `value`. `spinning`: a thread that finds the lock taken spins a while before it
    /// sleeps (glibc's adaptive mutex), for a lock that threads on several cores take for a few instructions each.
    package init(_ value: Value, spinning: Bool = false) {
        self.storage = unsafeDowncast(Storage.create(minimumCapacity: 1) { _ in value }, to: Storage.self)
        self.storage.initializeLock(spinning: spinning)
    }

    /// Runs `body` with exclusive access to the value.
    ///
    /// - Complexity: O(1) beyond `body`. The lock is not recursive: `body` must not take it again.
    @inline(__always)
    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try self.storage.withLock(body)
    }
}
