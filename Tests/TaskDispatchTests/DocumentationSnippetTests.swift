import Foundation
import Testing

/// Every Swift snippet in the README and in every article of the three DocC catalogs is compiled: its lines appear, in order and
/// together, in one of the Swift files listed in ``sources`` (test targets, the client package, and the nested
/// package that `.ci/run` tests). A snippet that cannot be compiled here (SwiftUI, or Point-Free's libraries) starts with the
/// comment `// Not compiled here`, and is exempt.
///
/// Lines are compared with their whitespace collapsed, so `swift format`'s spacing before a trailing comment does
/// not count; blank lines are ignored.
@Suite struct DocumentationSnippetTests {
    /// The documents whose every Swift snippet must be compiled, relative to the repository root: the lines of
    /// `Documents.txt`, beside this file, that are neither blank nor comments. `.ci/documents` fails when a Markdown
    /// file of a catalog is missing from it.
    static let documents: [String] = {
        let path = "\(Self.root)/Tests/TaskDispatchTests/Documents.txt"
        let list = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return list.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
    }()

    /// The Swift files that hold the snippets' compiled copies, relative to the repository root. The list is
    /// explicit (no directory walk), so the test needs only the Foundation API every platform has.
    static let sources = [
        "Tests/ClientPackage/Tests/ClientTests/InjectionRecipeTests.swift",
        "Tests/ClientPackage/Tests/ClientTests/MigrationGuideTests.swift",
        "Tests/ClientPackage/Tests/ClientTests/OneNamePerStepTests.swift",
        "Tests/ClientPackage/Tests/ClientTests/ReadmeAsyncTests.swift",
        "Tests/ClientPackage/Tests/ClientTests/ReadmeLandingPageTests.swift",
        "Tests/ClientPackage/Tests/ClientTests/ReadmeQuickStartTests.swift",
        "Tests/ClientPackage/Tests/ClientTests/RecipeTests.swift",
        "Tests/ClientPackage/Tests/DispatcherContractSnippets/LoggingDispatcher.swift",
        "Tests/ClientPackage/Tests/DispatcherContractSnippets/LoggingDispatcherTests.swift",
        "Tests/ClientPackage/Tests/DispatcherContractSnippets/SerialDispatcher.swift",
        "Tests/ClientPackage/Tests/DispatcherContractSnippets/SerialDispatcherTests.swift",
        "Tests/ClientPackage/Tests/GettingStartedSnippets/Fragments.swift",
        "Tests/ClientPackage/Tests/GettingStartedSnippets/SearchModel.swift",
        "Tests/ClientPackage/Tests/GettingStartedSnippets/SearchModelTests.swift",
        "Tests/ClientPackage/Tests/GettingStartedSnippets/SearchModelXCTests.swift",
        "Tests/ClientPackage/Tests/ManualDispatcherReferenceSnippets/HeadlinesModel.swift",
        "Tests/ClientPackage/Tests/ManualDispatcherReferenceSnippets/HeadlinesModelTests.swift",
        "Tests/ClientPackage/Tests/ManualDispatcherReferenceSnippets/SearchModel.swift",
        "Tests/ClientPackage/Tests/ManualDispatcherReferenceSnippets/SearchModelTests.swift",
        "Tests/ClientPackage/Tests/ManualDispatcherReferenceSnippets/TraitSuite.swift",
        "Tests/ClientPackage/Tests/ProductionDispatchersSnippets/ProductionDispatchersTests.swift",
        "Tests/ClientPackage/Tests/TaskDispatchLandingPageSnippets/CounterModel.swift",
        "Tests/ClientPackage/Tests/TaskDispatchLandingPageSnippets/CounterModelTests.swift",
        "Tests/ClientPackage/Tests/TaskDispatchLandingPageSnippets/Production.swift",
        "Tests/ClientPackage/Tests/TaskDispatchTestingLandingPageSnippets/CounterModelTests.swift",
        "Tests/ClientPackage/Tests/TaskDispatchTestingLandingPageSnippets/FeedModel.swift",
        "Tests/ClientPackage/Tests/TaskDispatchTestingLandingPageSnippets/FeedModelTests.swift",
        "Tests/ClientPackage/Tests/TestingAsyncCodeSnippets/ArticlesModel.swift",
        "Tests/ClientPackage/Tests/TestingAsyncCodeSnippets/Models.swift",
        "Tests/ClientPackage/Tests/TestingAsyncCodeSnippets/TestingAsyncCodeTests.swift",
        "Tests/ClientPackage/Tests/VirtualTimeAndOrderSnippets/Debouncer.swift",
        "Tests/ClientPackage/Tests/VirtualTimeAndOrderSnippets/Loader.swift",
        "Tests/ClientPackage/Tests/VirtualTimeAndOrderSnippets/OrderTests.swift",
        "Tests/ClientPackage/Tests/VirtualTimeAndOrderSnippets/SearchModel.swift",
        "Tests/ClientPackage/Tests/VirtualTimeAndOrderSnippets/Support.swift",
        "Tests/ClientPackage/Tests/VirtualTimeAndOrderSnippets/VirtualTimeTests.swift",
        "Tests/ClientPackage/Tests/WritingYourOwnDispatcherSnippets/ContractChecks.swift",
        "Tests/ClientPackage/Tests/WritingYourOwnDispatcherSnippets/Metrics.swift",
        "Tests/ClientPackage/Tests/WritingYourOwnDispatcherSnippets/MetricsDispatcher.swift",
        "Tests/ClientPackage/Tests/WritingYourOwnDispatcherSnippets/MetricsDispatcherTests.swift",
        "Tests/DependenciesRecipe/Sources/DependenciesRecipe/TaskDispatcherKey.swift",
        "Tests/DependenciesRecipe/Sources/DependenciesRecipe/GreetingModel.swift",
        "Tests/DependenciesRecipe/Tests/DependenciesRecipeTests/DependenciesRecipeTests.swift",
        "Tests/DependenciesRecipe/Tests/DependenciesRecipeTests/PointFreeBeforeTests.swift",
        "Tests/ImageExampleTests/ImageLoaderThreeWaysTests.swift",
        "Tests/ImageExampleTests/PlantedBugTests.swift",
        "Tests/ImageExampleTests/BuggyImageLoader.swift",
        "Tests/ImageExampleTests/ImageLoaderXCTests.swift",
    ]

    /// The repository root: three folders up from this file.
    static let root = #filePath.split(separator: "/", omittingEmptySubsequences: false).dropLast(3)
        .joined(separator: "/")

    /// The list is read, and holds the README and each catalog's landing page: an unreadable list would leave
    /// ``everySwiftSnippetIsCompiled(document:)`` nothing to check.
    @Test func theDocumentListIsRead() throws {
        _ = try String(contentsOfFile: "\(Self.root)/Tests/TaskDispatchTests/Documents.txt", encoding: .utf8)
        #expect(Self.documents.contains("README.md"))
        #expect(Self.documents.count >= 40)
    }

    /// Every article that a catalog's landing page links to (`<doc:Name>`) is in ``documents``, and so is the
    /// landing page. `.ci/documents` checks every Markdown file of the catalogs, linked or not; this test repeats
    /// the part it can do without listing folders, so that `swift test` alone catches a new linked article.
    @Test(arguments: ["TaskDispatch", "TaskDispatchTesting", "TaskDispatchTestingTraits"])
    func everyLinkedArticleIsChecked(catalog: String) throws {
        let folder = "Sources/\(catalog)/\(catalog).docc"
        let landingPage = "\(folder)/\(catalog).md"
        #expect(Self.documents.contains(landingPage))
        let text = try String(contentsOfFile: "\(Self.root)/\(landingPage)", encoding: .utf8)
        let linked = text.split(separator: "<doc:").dropFirst().compactMap { $0.split(separator: ">").first }
        let missing = linked.map { "\(folder)/\($0).md" }.filter { !Self.documents.contains($0) }
        #expect(missing.isEmpty, "add these to Tests/TaskDispatchTests/Documents.txt: \(missing)")
        if catalog != "TaskDispatchTestingTraits" { #expect(linked.count >= 5) }
    }

    @Test(arguments: Self.documents) func everySwiftSnippetIsCompiled(document: String) throws {
        let text = try String(contentsOfFile: "\(Self.root)/\(document)", encoding: .utf8)
        let sources = try Self.testSources()
        let snippets = Self.swiftSnippets(in: text)
        for snippet in snippets where snippet.first?.hasPrefix("// Not compiled here") != true {
            let found = sources.contains { Self.contains($0, snippet) }
            #expect(
                found,
                """
                \(document): this snippet is in none of the files DocumentationSnippetTests.sources lists; copy it \
                into one of them (or into a new test file that you add to the list), or mark it \
                "// Not compiled here":
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

    /// The files of ``sources``, each as normalized non-blank lines.
    static func testSources() throws -> [[String]] {
        try Self.sources.map { path in
            let text = try String(contentsOfFile: "\(Self.root)/\(path)", encoding: .utf8)
            return text.split(separator: "\n", omittingEmptySubsequences: false).compactMap(Self.normalized)
        }
    }
}
