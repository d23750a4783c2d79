import Foundation

/// Named counters, from any thread.
final class Metrics: @unchecked Sendable {
    // `counts` is only touched while `lock` is held.
    private let lock = NSLock()
    private var counts: [String: Int] = [:]

    func increment(_ name: String) {
        self.lock.withLock { self.counts[name, default: 0] += 1 }
    }

    func count(_ name: String) -> Int {
        self.lock.withLock { self.counts[name] ?? 0 }
    }
}
