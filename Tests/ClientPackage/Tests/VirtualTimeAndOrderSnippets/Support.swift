import Foundation

/// A small lock-protected counter.
final class Counter: @unchecked Sendable {
    // `count` is only touched while `lock` is held.
    private let lock = NSLock()
    private var count = 0

    func add(_ amount: Int) {
        self.lock.withLock { self.count += amount }
    }

    var value: Int {
        self.lock.withLock { self.count }
    }
}

/// A lock-protected log of what ran.
final class Log: @unchecked Sendable {
    // `entries` is only touched while `lock` is held.
    private let lock = NSLock()
    private var entries: [String] = []

    func append(_ entry: String) {
        self.lock.withLock { self.entries.append(entry) }
    }

    var values: [String] {
        self.lock.withLock { self.entries }
    }
}

/// A lock-protected flag.
final class Flag: @unchecked Sendable {
    // `isSet` is only touched while `lock` is held.
    private let lock = NSLock()
    private var isSet = false

    func set(_ value: Bool) {
        self.lock.withLock { self.isSet = value }
    }

    var value: Bool {
        self.lock.withLock { self.isSet }
    }
}
