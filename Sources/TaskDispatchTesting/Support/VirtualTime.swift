import TaskDispatch

/// Formats an instant on the virtual clock for messages and descriptions: `0 s`, `1.5 s`, `250 ms`, `7 s`;
/// `never` for a due time beyond the clock.
///
/// The one time format of the testing library: every message and description writes time through this or
/// `formatDuration(_:)`. See `formatNanoseconds(_:)` for the format.
func formatTime(_ nanoseconds: Int64) -> String {
    if nanoseconds == TaskKey.never { return "never" }
    return formatNanoseconds(nanoseconds)
}

/// Formats a duration for messages and descriptions, as `formatTime(_:)` writes an instant: `5 s`, `300 ms`.
///
/// A duration past the clock's range (about 292 years either way) reads `292 years or more` (`-292 years or less`).
func formatDuration(_ duration: Duration) -> String {
    switch duration.nanosecondsSaturated {
    case .max: "292 years or more"
    case .min: "-292 years or less"
    case let nanoseconds: formatNanoseconds(nanoseconds)
    }
}

/// `nanoseconds` in the largest unit of `s`, `ms`, `µs` and `ns` that it reaches, with the exact decimal fraction
/// and no trailing zeros: `0 s`, `7 s`, `1.5 s`, `99007 s`, `300 ms`, `1.000001 ms`, `250 µs`, `12 ns`, `-1.5 s`.
func formatNanoseconds(_ nanoseconds: Int64) -> String {
    if nanoseconds == 0 { return "0 s" }
    let sign = nanoseconds < 0 ? "-" : ""
    let magnitude = nanoseconds.magnitude
    let units: [(scale: UInt64, name: String, digits: Int)] = [
        (1_000_000_000, "s", 9), (1_000_000, "ms", 6), (1_000, "µs", 3),
    ]
    for unit in units where magnitude >= unit.scale {
        let whole = magnitude / unit.scale
        var fraction = magnitude % unit.scale
        guard fraction != 0 else { return "\(sign)\(whole) \(unit.name)" }
        var digits = unit.digits
        while fraction % 10 == 0 {
            fraction /= 10
            digits -= 1
        }
        let text = String(fraction)
        let padded = String(repeating: "0", count: digits - text.count) + text
        return "\(sign)\(whole).\(padded) \(unit.name)"
    }
    return "\(sign)\(magnitude) ns"
}

/// `1 task`, `3 tasks`.
func count(_ count: Int, _ noun: String) -> String {
    "\(count) \(noun)\(count == 1 ? "" : "s")"
}
