import Foundation

#if canImport(Darwin)
    // `@preconcurrency`: `mach_task_self_` is a C global that the SDKs before macOS 15.4 / iOS 18.4 (Xcode 16.3)
    // do not mark `nonisolated(unsafe)`, and Swift 6 rejects reading an unmarked one. The port is set once at
    // process start and never changes; with `@preconcurrency` the read compiles with the old SDKs and the new.
    // This file imports Darwin for nothing else, so no other use of it loses its concurrency checks.
    @preconcurrency import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The resident set size of this process, in bytes.
func residentBytes() -> Int {
    #if canImport(Darwin)
        var info = mach_task_basic_info()
        var count = mach_msg_type_number_t(MemoryLayout<mach_task_basic_info>.size / MemoryLayout<natural_t>.size)
        let result = withUnsafeMutablePointer(to: &info) { pointer in
            pointer.withMemoryRebound(to: integer_t.self, capacity: Int(count)) {
                task_info(mach_task_self_, task_flavor_t(MACH_TASK_BASIC_INFO), $0, &count)
            }
        }
        return result == KERN_SUCCESS ? Int(info.resident_size) : 0
    #else
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    #endif
}
