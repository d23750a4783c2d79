import TaskDispatch

/// Formats an instant on the virtual clock for messages and descriptions: `0 s`, `1.5 s`, `250 ms`, `7 s`;
/// `never` for a due time beyond the clock.
///
/// The one time format of the testing library: every message and description writes time through this or
/// `formatDuration(_:)`. See `formatNanoseconds(_:)` for the format.
func formatTime(_ nanoseconds: Int64) -> String {
    nanoseconds == TaskKey.never ? "never" : formatNanoseconds(nanoseconds)
}

/// A real-time limit as messages show it: a limit of zero or less checks once, so it reads `0 s`.
func formatRealTimeLimit(_ limit: Duration) -> String {
    formatTime(Swift.max(0, limit.nanosecondsSaturated))
}

/// Formats a duration for messages and descriptions, as `formatTime(_:)` writes an instant: `5 s`, `300 ms`.
///
/// A duration past the clock's range (about 292 years either way) reads `292 years or more` (`-292 years or less`).
/// In whole nanoseconds, the clock's unit, as the clock moves by it: a negative one rounded down (`-1.5 ns` reads
/// `-2 ns`, as `advance(by:)` moves), a positive one truncated; one shorter than a nanosecond, as `Duration` writes
/// it (`-1e-18 seconds`).
func formatDuration(_ duration: Duration) -> String {
    switch duration.nanosecondsRoundedDown {
    case .max: "292 years or more"
    case .min: "-292 years or less"
    case _ where duration != .zero && duration > .nanoseconds(-1) && duration < .nanoseconds(1): "\(duration)"
    case let nanoseconds: formatNanoseconds(nanoseconds)
    }
}

/// `1 task`, `3 tasks`.
func count(_ count: Int, _ noun: String) -> String {
    "\(count) \(noun)\(count == 1 ? "" : "s")"
}

/// A label as messages quote it: `"fetch"`, or `(no label)`.
func quoted(_ label: String?) -> String {
    label.map { "\"\($0)\"" } ?? "(no label)"
}

/// A run method as code calls it, for advice to paste: `advance(by: 1.5 s)` reads `advance(by: .milliseconds(1500))`,
/// in the largest unit that keeps it whole; any other method as it is.
func asCode(_ method: String) -> String {
    for call in ["advance(by: ", "advance(to: "] where method.hasPrefix(call) && method.hasSuffix(")") {
        let parts = method.dropFirst(call.count).dropLast().split(separator: " ")
        let places: [Substring: Int] = ["s": 9, "ms": 6, "µs": 3, "ns": 0]
        guard parts.count == 2, let places = places[parts[1]] else { return method }
        let number = parts[0].split(separator: ".")
        let fraction = number.count == 2 ? number[1] : ""
        guard number.count <= 2, fraction.count <= places,
            let nanoseconds = Int64(number[0] + fraction + String(repeating: "0", count: places - fraction.count))
        else { return method }
        let units: [(Int64, String)] = [
            (1_000_000_000, "seconds"), (1_000_000, "milliseconds"), (1_000, "microseconds"),
        ]
        let (unit, name) = units.first { nanoseconds % $0.0 == 0 } ?? (1, "nanoseconds")
        return "\(call).\(name)(\(nanoseconds / unit)))"
    }
    return method
}
