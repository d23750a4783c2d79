/// The one time format of the package's messages and descriptions; `TaskDispatchTesting` writes every time
/// through it.
///
/// `nanoseconds` in the largest unit of `s`, `ms`, `µs` and `ns` that it reaches, with the exact decimal fraction
/// and no trailing zeros: `0 s`, `7 s`, `1.5 s`, `99007 s`, `300 ms`, `1.000001 ms`, `250 µs`, `12 ns`, `-1.5 s`.
package func formatNanoseconds(_ nanoseconds: Int64) -> String {
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
