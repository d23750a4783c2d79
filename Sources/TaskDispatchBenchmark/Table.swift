import Foundation

/// One line of the result table.
struct Row {
    var measure: String
    var size: String
    var ours: String
    var baseline: String
    var ratio: Double?
    var target: String
    /// `nil` when the row has no target (information only).
    var met: Bool?

    static func failure(_ measure: String, size: String, _ message: String) -> Row {
        Row(measure: measure, size: size, ours: message, baseline: "-", ratio: nil, target: "-", met: false)
    }
}

/// Prints `rows` as a Markdown table, columns padded so it reads in a terminal too.
func printTable(_ rows: [Row]) {
    let header = ["measure", "size", "ours", "baseline", "ratio", "target", "met"]
    let cells = rows.map { row in
        [
            row.measure, row.size, row.ours, row.baseline,
            row.ratio.map { String(format: "%.2f×", $0) } ?? "-",
            row.target,
            row.met.map { $0 ? "met" : "NOT MET" } ?? "-",
        ]
    }
    var widths = header.map(\.count)
    for line in cells {
        for (index, cell) in line.enumerated() { widths[index] = max(widths[index], cell.count) }
    }
    func format(_ line: [String]) -> String {
        let padded = line.enumerated().map { index, cell in
            cell + String(repeating: " ", count: widths[index] - cell.count)
        }
        return "| " + padded.joined(separator: " | ") + " |"
    }
    print(format(header))
    print("|" + widths.map { String(repeating: "-", count: $0 + 2) }.joined(separator: "|") + "|")
    for line in cells { print(format(line)) }
}
