import Foundation
import ImageExample

/// The bytes of a PNG file's header: the signature and the `IHDR` chunk with the size.
func pngBytes(width: Int, height: Int) -> [UInt8] {
    let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
    let chunkLength: [UInt8] = [0, 0, 0, 13]
    func bigEndian(_ value: Int) -> [UInt8] { (0..<4).reversed().map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) } }
    return signature + chunkLength + Array("IHDR".utf8) + bigEndian(width) + bigEndian(height)
}

/// The image every test loads, and what it decodes to.
let catBytes = pngBytes(width: 640, height: 480)
let cat = DecodedImage(format: .png, width: 640, height: 480)

/// An ``ImageSource`` over a table of files that fails its first `failures` fetches and counts every fetch.
///
/// `@unchecked Sendable`: `failuresLeft` and `count` are only touched under `lock`.
final class TableImageSource: ImageSource, @unchecked Sendable {
    struct Unreachable: Error, CustomStringConvertible {
        var description: String { "the server is unreachable" }
    }

    struct NotFound: Error, CustomStringConvertible {
        let id: String
        var description: String { "no image \(id)" }
    }

    private let lock = NSLock()
    private let files: [String: [UInt8]]
    private var failuresLeft: Int
    private var count = 0

    init(_ files: [String: [UInt8]] = ["cat": catBytes], failures: Int = 0) {
        self.files = files
        self.failuresLeft = failures
    }

    /// The number of fetches so far.
    var fetchCount: Int {
        self.lock.lock()
        defer { self.lock.unlock() }
        return self.count
    }

    func imageData(for id: String) throws -> [UInt8] {
        self.lock.lock()
        defer { self.lock.unlock() }
        self.count += 1
        if self.failuresLeft > 0 {
            self.failuresLeft -= 1
            throw Unreachable()
        }
        guard let bytes = self.files[id] else { throw NotFound(id: id) }
        return bytes
    }
}

/// The results a completion handler received, in order, from any thread.
///
/// `@unchecked Sendable`: `stored` is only touched under `lock`.
final class Deliveries: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [Result<DecodedImage, ImageLoadingError>] = []

    var results: [Result<DecodedImage, ImageLoadingError>] {
        self.lock.lock()
        defer { self.lock.unlock() }
        return self.stored
    }

    func record(_ result: Result<DecodedImage, ImageLoadingError>) {
        self.lock.lock()
        defer { self.lock.unlock() }
        self.stored.append(result)
    }
}
