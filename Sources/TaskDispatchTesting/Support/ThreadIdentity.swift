#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Bionic)
    import Bionic
#endif

/// Writes `text` to standard error in one call, so reports from parallel tests do not interleave mid-line.
func writeToStandardError(_ text: String) {
    var bytes = Array(text.utf8)
    bytes.withUnsafeMutableBytes { buffer in
        var offset = 0
        while offset < buffer.count {
            let written = write(2, buffer.baseAddress.map { $0 + offset }, buffer.count - offset)
            guard written > 0 else { return }
            offset += written
        }
    }
}
