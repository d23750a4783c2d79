import Dispatch
import Foundation
import TaskDispatchTesting

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Nanoseconds on a monotonic clock.
@inline(__always)
func nowNanoseconds() -> UInt64 {
    DispatchTime.now().uptimeNanoseconds
}

/// Runs `body` once and returns the elapsed nanoseconds.
@inline(__always)
func time(_ body: () throws -> Void) rethrows -> Double {
    let start = nowNanoseconds()
    try body()
    return Double(nowNanoseconds() - start)
}

func median(_ values: [Double]) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

/// The lock the library uses on this platform: a pthread mutex (os_unfair_lock on Darwin).
final class PlatformLock: @unchecked Sendable {
    #if canImport(Darwin)
        private let lock = UnsafeMutablePointer<os_unfair_lock>.allocate(capacity: 1)
    #else
        private let lock = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    #endif

    init() {
        #if canImport(Darwin)
            self.lock.initialize(to: os_unfair_lock())
        #else
            self.lock.initialize(to: pthread_mutex_t())
            pthread_mutex_init(self.lock, nil)
        #endif
    }

    deinit {
        #if !canImport(Darwin)
            pthread_mutex_destroy(self.lock)
        #endif
        self.lock.deinitialize(count: 1)
        self.lock.deallocate()
    }

    @inline(__always)
    func withLock<Result>(_ body: () throws -> Result) rethrows -> Result {
        #if canImport(Darwin)
            os_unfair_lock_lock(self.lock)
            defer { os_unfair_lock_unlock(self.lock) }
        #else
            pthread_mutex_lock(self.lock)
            defer { pthread_mutex_unlock(self.lock) }
        #endif
        return try body()
    }
}

/// What every benchmarked task does: bump a counter, so that its closure captures a reference and allocates.
final class Counter: @unchecked Sendable {
    var value = 0
}

/// `count` delays in 1...1,000,000 ns, the same for every run (the generator `ManualDispatcher`'s random order
/// uses).
func randomDelays(_ count: Int) -> [Int64] {
    var generator = SplitMix64(seed: 42)
    return (0..<count).map { _ in Int64(generator.next() % 1_000_000) + 1 }
}

/// The machine the numbers come from.
func machineDescription() -> String {
    var lines: [String] = []
    lines.append("cores (active): \(ProcessInfo.processInfo.activeProcessorCount)")
    if let cpuinfo = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8),
        let line = cpuinfo.split(separator: "\n").first(where: { $0.hasPrefix("model name") }),
        let name = line.split(separator: ":", maxSplits: 1).last
    {
        lines.append("cpu: \(name.trimmingCharacters(in: .whitespaces))")
    }
    lines.append("os: \(ProcessInfo.processInfo.operatingSystemVersionString)")
    lines.append("compiler: \(compilerVersion)")
    lines.append("memory: \(ProcessInfo.processInfo.physicalMemory / 1_048_576) MiB")
    return lines.joined(separator: "\n")
}

var compilerVersion: String {
    #if compiler(>=6.4)
        "Swift 6.4 or later"
    #elseif compiler(>=6.3)
        "Swift 6.3"
    #elseif compiler(>=6.2)
        "Swift 6.2"
    #elseif compiler(>=6.1)
        "Swift 6.1"
    #else
        "Swift 6.0"
    #endif
}

/// Formats nanoseconds for the table.
func formatNanoseconds(_ value: Double) -> String {
    guard value.isFinite else { return "-" }
    if value >= 10_000_000 { return String(format: "%.1f ms", value / 1_000_000) }
    if value >= 10_000 { return String(format: "%.1f µs", value / 1_000) }
    if value >= 100 { return String(format: "%.0f ns", value) }
    return String(format: "%.1f ns", value)
}

func formatCount(_ value: Int) -> String {
    let digits = String(value)
    var result = ""
    for (index, character) in digits.enumerated() {
        if index > 0 && (digits.count - index) % 3 == 0 { result.append(",") }
        result.append(character)
    }
    return result
}
