import TaskDispatch

/// Formats virtual time for messages: `0 s`, `1.5 s`, `250 ms`; `never` for a due time beyond the clock.
func formatTime(_ nanoseconds: Int64) -> String {
    if nanoseconds == TaskKey.never { return "never" }
    if nanoseconds == 0 { return "0 s" }
    if nanoseconds % 1_000_000_000 == 0 { return "\(nanoseconds / 1_000_000_000) s" }
    if nanoseconds % 1_000_000 == 0 { return "\(nanoseconds / 1_000_000) ms" }
    if nanoseconds % 1_000 == 0 { return "\(nanoseconds / 1_000) µs" }
    return "\(nanoseconds) ns"
}

/// `1 task`, `3 tasks`.
func count(_ count: Int, _ noun: String) -> String {
    "\(count) \(noun)\(count == 1 ? "" : "s")"
}
