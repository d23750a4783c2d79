import TaskDispatch

/// The call sites a schedule has seen, each stored once, so a task carries a 4-byte index, not a 32-byte ``CallSite``.
struct CallSiteTable: Sendable {
    private struct Key: Hashable {
        var file: UInt
        var line: UInt
    }

    private(set) var sites: [CallSite] = []
    private var indices: [Key: UInt32] = [:]
    private var lastKey = Key(file: 0, line: 0)
    private var lastIndex: UInt32 = .max

    /// The index of `site`, adding it on first sight; O(1) amortized.
    @inline(__always)
    mutating func index(of site: CallSite) -> UInt32 {
        let key = Key(file: Self.identity(of: site.fileID), line: site.line)
        if key == self.lastKey && self.lastIndex != .max { return self.lastIndex }
        let index = self.indices[key] ?? self.add(site, key)
        self.lastKey = key
        self.lastIndex = index
        return index
    }

    private mutating func add(_ site: CallSite, _ key: Key) -> UInt32 {
        let index = UInt32(truncatingIfNeeded: self.sites.count)
        self.sites.append(site)
        self.indices[key] = index
        return index
    }

    /// The address of a file name's text: string literals are uniqued, so one file has one address.
    @inline(__always)
    private static func identity(of file: StaticString) -> UInt {
        guard file.hasPointerRepresentation else { return UInt(file.unicodeScalar.value) | (1 << (UInt.bitWidth - 1)) }
        return UInt(bitPattern: file.utf8Start)
    }
}
