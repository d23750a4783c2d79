#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Bionic)
    import Bionic
#endif

/// A value guarded by a mutex, with a condition variable to wait on for changes to it.
///
/// ``ManualDispatcher`` keeps its schedule in one: dispatches and run steps lock it briefly, and a run method
/// that must wait for another thread's run blocks on the condition until that run ends, instead of spinning.
/// (`Mutex` from Synchronization needs macOS 15 and has no condition; `os_unfair_lock` has none either.)
///
/// `@unchecked Sendable`: the value is read and written only between `pthread_mutex_lock` and
/// `pthread_mutex_unlock` on `mutex`; the three pointers are allocated in `init`, before the monitor is shared,
/// and freed in `deinit`, when no other reference exists.
final class Monitor<Value: Sendable>: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private let value = UnsafeMutablePointer<Value>.allocate(capacity: 1)
    #if DEBUG
        /// How many times the mutex was taken through ``withLock(_:)`` and ``waitForResult(_:)``; guarded by it.
        private var acquisitions = 0
    #endif

    init(_ value: Value) {
        self.value.initialize(to: value)
        self.mutex.initialize(to: pthread_mutex_t())
        self.condition.initialize(to: pthread_cond_t())
        #if canImport(Glibc)
            // Adaptive: a contended lock spins briefly before it sleeps, as Darwin's does. The dispatcher's lock is
            // held for a few hundred nanoseconds at a time, and a thread that finishes a tracked task often meets the
            // test's thread in it; sleeping and waking in the kernel would cost each of them microseconds.
            var attributes = pthread_mutexattr_t()
            pthread_mutexattr_init(&attributes)
            pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ADAPTIVE_NP))
            let locked = pthread_mutex_init(self.mutex, &attributes)
            pthread_mutexattr_destroy(&attributes)
        #else
            let locked = pthread_mutex_init(self.mutex, nil)
        #endif
        precondition(locked == 0, "pthread_mutex_init failed with \(locked)")
        let conditioned = pthread_cond_init(self.condition, nil)
        precondition(conditioned == 0, "pthread_cond_init failed with \(conditioned)")
    }

    deinit {
        pthread_cond_destroy(self.condition)
        pthread_mutex_destroy(self.mutex)
        self.value.deinitialize(count: 1)
        self.value.deallocate()
        self.condition.deallocate()
        self.mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value.
    ///
    /// - Complexity: O(1) beyond `body`. Not recursive: `body` must not lock again.
    @inline(__always)
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(self.mutex)
        defer { pthread_mutex_unlock(self.mutex) }
        #if DEBUG
            self.acquisitions += 1
        #endif
        return try body(&self.value.pointee)
    }

    /// Runs `body` with exclusive access to the value until it returns a result; while it returns `nil`, waits
    /// for ``broadcast()`` (the lock released during the wait) and runs it again.
    func waitForResult<Result>(_ body: (inout Value) -> Result?) -> Result {
        pthread_mutex_lock(self.mutex)
        defer { pthread_mutex_unlock(self.mutex) }
        #if DEBUG
            self.acquisitions += 1
        #endif
        while true {
            if let result = body(&self.value.pointee) { return result }
            pthread_cond_wait(self.condition, self.mutex)
        }
    }

    #if DEBUG
        /// How many times the lock has been taken so far, read without counting this read; for the package's tests.
        var acquisitionCount: Int {
            pthread_mutex_lock(self.mutex)
            defer { pthread_mutex_unlock(self.mutex) }
            return self.acquisitions
        }
    #endif

    /// Wakes every thread waiting in ``waitForResult(_:)``.
    func broadcast() {
        pthread_cond_broadcast(self.condition)
    }
}
