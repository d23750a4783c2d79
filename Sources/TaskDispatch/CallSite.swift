/// The place in source code that dispatched a task: a file identifier and a line.
///
/// Every dispatch records its call site through `#fileID` and `#line` default arguments, so diagnostics can say
/// where a task came from, such as `FeedKit/FeedService.swift:42`. The file identifier is a `StaticString`, so
/// recording a call site never allocates.
public struct CallSite: Sendable, Hashable, CustomStringConvertible {
    /// The `#fileID` of the dispatching code, such as `"FeedKit/FeedService.swift"`.
    public let fileID: StaticString

    /// The line of the dispatching code.
    public let line: UInt

    /// Creates a call site; the defaults capture the caller's own location.
    ///
    /// - Parameters:
    ///   - fileID: The file identifier, `#fileID` by default.
    ///   - line: The line, `#line` by default.
    public init(fileID: StaticString = #fileID, line: UInt = #line) {
        self.fileID = fileID
        self.line = line
    }

    /// The call site as `Module/File.swift:line`.
    public var description: String {
        "\(self.fileID):\(self.line)"
    }

    /// Two call sites are equal when they name the same file and line.
    public static func == (lhs: CallSite, rhs: CallSite) -> Bool {
        lhs.line == rhs.line && lhs.fileID.description == rhs.fileID.description
    }

    /// Hashes the file identifier and line.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(self.fileID.description)
        hasher.combine(self.line)
    }
}
