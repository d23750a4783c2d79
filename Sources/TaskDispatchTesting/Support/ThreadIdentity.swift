#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Bionic)
    import Bionic
#endif

/// The calling thread, as a number that tells a re-entrant call from another thread's.
///
/// Opaque to the optimizer: `pthread_self()` is declared `const`, so an optimized build may reuse one call's result
/// across an `await` and name a thread the code has left; a call to this function is made each time it is written.
@inline(never) @_optimize(none)
package func currentThreadIdentity() -> UInt {
    #if canImport(Darwin)
        UInt(bitPattern: pthread_self())
    #else
        UInt(pthread_self())
    #endif
}

/// Writes `text` to standard error in one call, so reports from parallel tests do not interleave mid-line.
func writeToStandardError(_ text: String) {
    Array(text.utf8).withUnsafeBytes { buffer in
        var offset = 0
        while offset < buffer.count {
            let written = write(2, buffer.baseAddress.map { $0 + offset }, buffer.count - offset)
            guard written > 0 else { return }
            offset += written
        }
    }
}

/// The value of environment variable `name`, if it is set.
func environmentValue(_ name: String) -> String? {
    getenv(name).map { String(cString: $0) }
}
