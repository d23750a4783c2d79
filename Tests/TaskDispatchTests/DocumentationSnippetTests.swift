import Foundation
import Testing

/// Every Swift snippet in the README and in every article of the three DocC catalogs is compiled: its lines appear, in order and
/// together, in one of the Swift files listed in ``sources`` (test targets, the client package, and the nested
/// package that `.ci/run` tests).
///
/// The documents are listed in `Documents.txt`, beside this file; `.ci/documents` fails when a Markdown file of a
/// catalog is missing from it. A Swift snippet is a fenced block whose language is `swift`, in any case, after
/// backticks or tildes, with or without a space.
///
/// Two kinds of snippet are checked differently:
/// - **An excerpt** starts with the comment `// An excerpt`, and leaves out lines of a type it shows (its stored
///   properties and initializer, say): its other lines must appear in order, though not together, in one file.
/// - **What cannot be compiled here** starts with `// Not compiled here:` and names why, one of ``exemptions``:
///   a fragment of a `Package.swift` manifest, or SwiftUI, which Linux lacks. It is exempt.
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

    /// What a `// Not compiled here:` comment may name as the reason; any other reason fails the check.
    static let exemptions = ["Package.swift", "SwiftUI"]

    /// The Swift files that hold the snippets' compiled copies, relative to the repository root. The list is
    /// explicit (no directory walk), so the test needs only the Foundation API every platform has.
    static let sources = [
        "Tests/ClientPackage/Tests/ClientTests/AvatarCache.swift",
        "Tests/ClientPackage/Tests/ClientTests/InjectionRecipeTests.swift",
        "Tests/ClientPackage/Tests/ClientTests/MigrationGuideTests.swift",
        "Tests/ClientPackage/Tests/ClientTests/OneNamePerStepTests.swift",
        "Tests/ClientPackage/Tests/ClientTests/ReadmeAsyncTests.swift",
        "Tests/ClientPackage/Tests/ClientTests/ReadmeLandingPageTests.swift",
        "Tests/ClientPackage/Tests/ClientTests/ReadmeQuickStartTests.swift",
        "Tests/ClientPackage/Tests/ClientTests/RecipeTests.swift",
        "Tests/ClientPackage/Tests/ClientTests/RepeatingWorkAndScopesTests.swift",
        "Tests/ClientPackage/Tests/DispatcherContractSnippets/LoggingDispatcher.swift",
        "Tests/ClientPackage/Tests/DispatcherContractSnippets/LoggingDispatcherTests.swift",
        "Tests/ClientPackage/Tests/DispatcherContractSnippets/SerialDispatcher.swift",
        "Tests/ClientPackage/Tests/DispatcherContractSnippets/SerialDispatcherTests.swift",
        "Tests/ClientPackage/Tests/GettingStartedSnippets/Fragments.swift",
        "Tests/ClientPackage/Tests/GettingStartedSnippets/SearchModel.swift",
        "Tests/ClientPackage/Tests/GettingStartedSnippets/SearchModelTests.swift",
        "Tests/ClientPackage/Tests/GettingStartedSnippets/SearchModelXCTests.swift",
        "Tests/ClientPackage/Tests/ManualDispatcherReferenceSnippets/DashboardModel.swift",
        "Tests/ClientPackage/Tests/ManualDispatcherReferenceSnippets/DashboardModelTests.swift",
        "Tests/ClientPackage/Tests/ManualDispatcherReferenceSnippets/HeadlinesModel.swift",
        "Tests/ClientPackage/Tests/ManualDispatcherReferenceSnippets/HeadlinesModelTests.swift",
        "Tests/ClientPackage/Tests/ManualDispatcherReferenceSnippets/LoadErrorTests.swift",
        "Tests/ClientPackage/Tests/ManualDispatcherReferenceSnippets/SearchModel.swift",
        "Tests/ClientPackage/Tests/ManualDispatcherReferenceSnippets/SearchModelTests.swift",
        "Tests/ClientPackage/Tests/ManualDispatcherReferenceSnippets/TraitSuite.swift",
        "Tests/ClientPackage/Tests/ProductionDispatchersSnippets/ProductionDispatchersTests.swift",
        "Tests/ClientPackage/Tests/TaskDispatchLandingPageSnippets/CounterModel.swift",
        "Tests/ClientPackage/Tests/TaskDispatchLandingPageSnippets/CounterModelTests.swift",
        "Tests/ClientPackage/Tests/TaskDispatchLandingPageSnippets/Production.swift",
        "Tests/ClientPackage/Tests/TaskDispatchTestingLandingPageSnippets/CounterModelTests.swift",
        "Tests/ClientPackage/Tests/TaskDispatchTestingLandingPageSnippets/CounterModelXCTests.swift",
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
        "Tests/TaskDispatchTests/BackgroundWorkWaitingTests.swift",
        "Tests/TaskDispatchXCTests/MainActorXCTests.swift",
        "Tests/TaskDispatchXCTests/ManualDispatcherRegistryXCTests.swift",
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

    /// The README is a landing page: under 200 lines, with the example's and the tests' commands on its first screen
    /// (it had grown to 202; issue 33).
    @Test func theReadmeIsALandingPage() throws {
        let text = try String(contentsOfFile: "\(Self.root)/README.md", encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let count = lines.count - (text.hasSuffix("\n") ? 1 : 0)
        #expect(count < 200, "README.md has \(count) lines; keep it under 200 and move the detail to a DocC article")
        let firstScreen = lines.prefix(20)
        #expect(firstScreen.contains { $0.hasPrefix("swift run feed-demo") })
        #expect(firstScreen.contains { $0.hasPrefix("swift test") })
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
        for snippet in Self.swiftSnippets(in: text) {
            switch Self.kind(of: snippet) {
            case .exempt(let reason):
                #expect(
                    Self.exemptions.contains { reason.contains($0) },
                    """
                    \(document): a snippet is marked "// Not compiled here: \(reason)", but only \(Self.exemptions) \
                    may stay uncompiled; copy it into one of the files DocumentationSnippetTests.sources lists:
                    \(snippet.joined(separator: "\n"))
                    """
                )
            case .excerpt(let lines):
                #expect(
                    sources.contains { Self.containsInOrder($0, lines) },
                    """
                    \(document): the lines of this excerpt do not appear in order in any one of the files \
                    DocumentationSnippetTests.sources lists; update the excerpt or its compiled copy:
                    \(snippet.joined(separator: "\n"))
                    """
                )
            case .whole:
                #expect(
                    sources.contains { Self.contains($0, snippet) },
                    """
                    \(document): this snippet is in none of the files DocumentationSnippetTests.sources lists; copy it \
                    into one of them (or into a new test file that you add to the list), mark it "// An excerpt" if \
                    it leaves lines out, or mark it "// Not compiled here: <why>" for one of \(Self.exemptions):
                    \(snippet.joined(separator: "\n"))
                    """
                )
            }
        }
    }

    @Test func findsFencesOfEveryShape() {
        let markdown = """
            ```swift
            let a = 1
            ```
            ```Swift
            let b = 2
            ```
            ``` swift
            let c = 3
            ```
            ~~~swift
            let d = 4
            ~~~
            ````swift title="Inner.swift"
            let e = 5
            ```
            ````
            ```sh
            swift build
            ```
            ```
            let notSwift = 6
            ```
            """
        #expect(
            Self.swiftSnippets(in: markdown) == [
                ["let a = 1"], ["let b = 2"], ["let c = 3"], ["let d = 4"], ["let e = 5", "```"],
            ]
        )
    }

    @Test func matchesAnExcerptInOrderOnly() {
        let file = ["final class Model {", "var items: [String] = []", "func load() {", "items = []", "}", "}"]
        #expect(Self.containsInOrder(file, ["final class Model {", "func load() {", "}", "}"]))
        #expect(!Self.containsInOrder(file, ["func load() {", "final class Model {"]))
        #expect(!Self.contains(file, ["final class Model {", "func load() {"]))
    }

    /// How a snippet is checked.
    enum Kind {
        /// Its lines appear together in one file.
        case whole
        /// `// An excerpt`: these lines, the comment left out, appear in order in one file.
        case excerpt([String])
        /// `// Not compiled here: <reason>`: not checked.
        case exempt(reason: String)
    }

    /// How `snippet` is checked, from the comment on its first line.
    static func kind(of snippet: [String]) -> Kind {
        guard let first = snippet.first else { return .whole }
        if first.hasPrefix("// Not compiled here") {
            let reason = first.dropFirst("// Not compiled here".count).drop { $0 == ":" || $0 == " " }
            return .exempt(reason: String(reason))
        }
        if first.hasPrefix("// An excerpt") {
            return .excerpt(Array(snippet.dropFirst()))
        }
        return .whole
    }

    /// The Swift code blocks of a Markdown text, each as its normalized non-blank lines.
    ///
    /// A fence is three or more backticks or tildes; the block's language is the first word after it, compared
    /// without regard to case. The block ends at a line of the same character, at least as long. Blocks in other
    /// languages are skipped whole, so a fence inside them does not count.
    static func swiftSnippets(in text: String) -> [[String]] {
        var snippets: [[String]] = []
        var block: (fence: String, lines: [String]?)?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if let current = block {
                if trimmed.hasPrefix(current.fence), trimmed.allSatisfy({ $0 == current.fence.first }) {
                    if let lines = current.lines { snippets.append(lines) }
                    block = nil
                } else if current.lines != nil, let normalized = Self.normalized(line) {
                    block?.lines?.append(normalized)
                }
            } else if let fence = Self.fence(opening: trimmed) {
                let language = trimmed.dropFirst(fence.count).split(separator: " ").first?.lowercased()
                block = (fence, language == "swift" ? [] : nil)
            }
        }
        return snippets
    }

    /// The run of three or more backticks or tildes that opens a fenced block on this line, if it does.
    static func fence(opening line: String) -> String? {
        guard let mark = line.first, mark == "`" || mark == "~" else { return nil }
        let fence = String(line.prefix { $0 == mark })
        return fence.count >= 3 ? fence : nil
    }

    /// The line with its whitespace collapsed, or `nil` for a blank line.
    static func normalized(_ line: Substring) -> String? {
        let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
        return words.isEmpty ? nil : words.joined(separator: " ")
    }

    /// Whether `snippet` appears in `lines` as consecutive lines.
    static func contains(_ lines: [String], _ snippet: [String]) -> Bool {
        guard !snippet.isEmpty else { return true }
        guard lines.count >= snippet.count else { return false }
        return (0...(lines.count - snippet.count)).contains { start in
            lines[start..<(start + snippet.count)].elementsEqual(snippet)
        }
    }

    /// Whether the lines of `excerpt` appear in `lines` in the same order, with any lines between them.
    ///
    /// - Complexity: O(*n*), where *n* is the number of lines: each is compared at most once.
    static func containsInOrder(_ lines: [String], _ excerpt: [String]) -> Bool {
        var remaining = excerpt[...]
        for line in lines where line == remaining.first {
            remaining = remaining.dropFirst()
        }
        return remaining.isEmpty
    }

    /// The files of ``sources``, each as normalized non-blank lines.
    static func testSources() throws -> [[String]] {
        try Self.sources.map { path in
            let text = try String(contentsOfFile: "\(Self.root)/\(path)", encoding: .utf8)
            return text.split(separator: "\n", omittingEmptySubsequences: false).compactMap(Self.normalized)
        }
    }
}
