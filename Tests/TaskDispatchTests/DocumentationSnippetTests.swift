import Foundation
import Testing

/// Every Swift snippet in the README and in the adoption articles is compiled: its lines appear, in order and
/// together, in a Swift file under `Tests/` (a test target, the client package, or a nested package that
/// `.ci/run` tests). A snippet that cannot be compiled here (SwiftUI, or Point-Free's libraries) starts with the
/// comment `// Not compiled here`, and is exempt.
///
/// Lines are compared with their whitespace collapsed, so `swift format`'s spacing before a trailing comment does
/// not count; blank lines are ignored.
@Suite struct DocumentationSnippetTests {
    /// The documents whose every Swift snippet must be compiled, relative to the repository root.
    static let documents = [
        "README.md",
        "Sources/TaskDispatch/TaskDispatch.docc/InjectingADispatcher.md",
        "Sources/TaskDispatch/TaskDispatch.docc/MigratingFromDispatchQueues.md",
        "Sources/TaskDispatchTesting/TaskDispatchTesting.docc/ChoosingHowToTestAsyncCode.md",
        "Sources/TaskDispatchTesting/TaskDispatchTesting.docc/MigratingFromPointFree.md",
        "Sources/TaskDispatchTesting/TaskDispatchTesting.docc/MigratingFromExpectations.md",
        "Sources/TaskDispatchTesting/TaskDispatchTesting.docc/MigratingFromDWTaskDispatcher.md",
        "Sources/TaskDispatchTesting/TaskDispatchTesting.docc/RecipesForRecurringShapes.md",
        "Sources/TaskDispatchTesting/TaskDispatchTesting.docc/TestingTheImageLoader.md",
    ]

    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test(arguments: Self.documents) func everySwiftSnippetIsCompiled(document: String) throws {
        let text = try String(contentsOf: Self.root.appendingPathComponent(document), encoding: .utf8)
        let sources = try Self.testSources()
        let snippets = Self.swiftSnippets(in: text)
        for snippet in snippets where snippet.first?.hasPrefix("// Not compiled here") != true {
            let found = sources.contains { Self.contains($0.lines, snippet) }
            #expect(
                found,
                """
                \(document): this snippet is not in any Swift file under Tests/; copy it into a test (the client \
                package, a test target, or a nested package .ci/run tests), or mark it "// Not compiled here":
                \(snippet.joined(separator: "\n"))
                """
            )
        }
    }

    /// The Swift code blocks of a Markdown text, each as its normalized non-blank lines.
    static func swiftSnippets(in text: String) -> [[String]] {
        var snippets: [[String]] = []
        var current: [String]?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if current == nil, trimmed == "```swift" {
                current = []
            } else if current != nil, trimmed == "```" {
                snippets.append(current ?? [])
                current = nil
            } else if current != nil, let normalized = Self.normalized(line) {
                current?.append(normalized)
            }
        }
        return snippets
    }

    /// The line with its whitespace collapsed, or `nil` for a blank line.
    static func normalized(_ line: Substring) -> String? {
        let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
        return words.isEmpty ? nil : words.joined(separator: " ")
    }

    static func contains(_ lines: [String], _ snippet: [String]) -> Bool {
        guard !snippet.isEmpty else { return true }
        guard lines.count >= snippet.count else { return false }
        return (0...(lines.count - snippet.count)).contains { start in
            lines[start..<(start + snippet.count)].elementsEqual(snippet)
        }
    }

    /// Every Swift file under `Tests/`, outside build folders, as normalized non-blank lines.
    static func testSources() throws -> [(path: String, lines: [String])] {
        let tests = Self.root.appendingPathComponent("Tests")
        let files = FileManager.default.enumerator(
            at: tests,
            includingPropertiesForKeys: nil,
            options: [.skipsHiddenFiles]
        )
        var sources: [(path: String, lines: [String])] = []
        while let url = files?.nextObject() as? URL {
            guard url.pathExtension == "swift" else { continue }
            let text = try String(contentsOf: url, encoding: .utf8)
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false).compactMap(Self.normalized)
            sources.append((url.path, lines))
        }
        return sources
    }
}
