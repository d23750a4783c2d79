import Dispatch
import Foundation

/// What one benchmark run does: a quick pass for CI, or the full sizes and repetitions for the table in the docs.
struct Configuration {
    let name: String
    let sizes: [Int]
    let repetitions: Int
    let sleepers: [Int]
    let cases: Int

    static let quick = Configuration(
        name: "quick", sizes: [1_000, 10_000, 100_000], repetitions: 3, sleepers: [100, 1_000], cases: 100)
    static let full = Configuration(
        name: "full", sizes: [1_000, 10_000, 100_000, 1_000_000], repetitions: 7, sleepers: [100, 1_000, 5_000],
        cases: 1_000)
    /// The sleeper table alone, up to 10,000 sleepers: how a wake-up scales with the tracked tasks.
    static let sleepersOnly = Configuration(
        name: "sleepers", sizes: [], repetitions: 5, sleepers: [100, 1_000, 5_000, 10_000], cases: 0)
    /// The scenario table alone, as in the full run: without the per-task tables before it, whose work leaves the
    /// thread pool awake.
    static let scenariosOnly = Configuration(name: "scenarios", sizes: [], repetitions: 5, sleepers: [], cases: 1_000)
}

/// A counter the measured closures bump; unchecked because each contender runs its closures on one thread.
final class Counter: @unchecked Sendable {
    var value = 0
}

struct BenchmarkError: Error, CustomStringConvertible {
    let description: String
}

func check(_ counter: Counter, _ expected: Int, _ what: String) throws {
    guard counter.value == expected else {
        throw BenchmarkError(description: "\(what) ran \(counter.value) closures, expected \(expected)")
    }
}

/// Seconds taken by `body`.
func time(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

/// Seconds taken by `body`, async.
nonisolated(nonsending) func timeAsync(_ body: () async throws -> Void) async rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try await body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

/// The median of `values`.
func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted[sorted.count / 2]
}

/// Runs each contender `repetitions` times, alternating between them so that the machine's load falls on all alike,
/// and returns each one's median, in nanoseconds per unit of work.
nonisolated(nonsending) func compare(
    _ contenders: [(name: String, run: () async throws -> Double)],
    units: Int,
    repetitions: Int
) async throws -> [(name: String, nanoseconds: Double)] {
    var samples = Array(repeating: [Double](), count: contenders.count)
    for _ in 0..<repetitions {
        for (index, contender) in contenders.enumerated() {
            samples[index].append(try await contender.run() * 1e9 / Double(units))
        }
    }
    return zip(contenders, samples).map { ($0.name, median($1)) }
}

/// Prints a table with a header row, padding each column to its widest cell.
func printTable(_ title: String, _ header: [String], _ rows: [[String]]) {
    let widths = header.indices.map { column in
        ([header] + rows).map { $0[column].count }.max() ?? 0
    }
    func line(_ cells: [String]) -> String {
        "| "
            + zip(cells, widths).map { $0.padding(toLength: $1, withPad: " ", startingAt: 0) }
            .joined(separator: " | ") + " |"
    }
    print("\n### \(title)\n")
    print(line(header))
    print("|" + widths.map { String(repeating: "-", count: $0 + 2) }.joined(separator: "|") + "|")
    for row in rows { print(line(row)) }
}

func format(_ nanoseconds: Double) -> String {
    nanoseconds >= 100 ? String(format: "%.0f", nanoseconds) : String(format: "%.1f", nanoseconds)
}

func ratio(_ value: Double, _ base: Double) -> String {
    String(format: "%.2f×", value / base)
}
