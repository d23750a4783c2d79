/// Decodes the header of a PNG or GIF file: a pure function over bytes, safe on any thread.
///
/// ``ImageLoader`` calls it in the background, because a real decoder is too slow for the main actor.
///
/// ```swift
/// let image = try ImageDecoder.decode(bytes)    // DecodedImage(format: .png, width: 640, height: 480)
/// ```
public enum ImageDecoder {
    private static let pngSignature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
    private static let pngHeaderChunk: [UInt8] = Array("IHDR".utf8)
    private static let gifSignatures: [[UInt8]] = [Array("GIF87a".utf8), Array("GIF89a".utf8)]

    /// Reads the format and the size from the start of an image file.
    ///
    /// - Parameter bytes: The file's bytes; only the first 24 (PNG) or 10 (GIF) are read.
    /// - Returns: The format and the size in pixels.
    /// - Throws: ``ImageDecodingError`` when the bytes are not a PNG or GIF header, or the size is zero.
    /// - Complexity: O(1).
    public static func decode(_ bytes: [UInt8]) throws(ImageDecodingError) -> DecodedImage {
        if bytes.starts(with: Self.pngSignature) {
            return try Self.decodePNG(bytes)
        }
        if Self.gifSignatures.contains(where: { bytes.starts(with: $0) }) {
            return try Self.decodeGIF(bytes)
        }
        throw .unknownFormat(byteCount: bytes.count)
    }

    private static func decodePNG(_ bytes: [UInt8]) throws(ImageDecodingError) -> DecodedImage {
        guard bytes.count >= 24 else { throw .truncated(format: .png, byteCount: bytes.count) }
        guard Array(bytes[12..<16]) == Self.pngHeaderChunk else { throw .truncated(format: .png, byteCount: 12) }
        let width = bytes[16..<20].reduce(0) { $0 << 8 | Int($1) }
        let height = bytes[20..<24].reduce(0) { $0 << 8 | Int($1) }
        return try Self.image(.png, width: width, height: height)
    }

    private static func decodeGIF(_ bytes: [UInt8]) throws(ImageDecodingError) -> DecodedImage {
        guard bytes.count >= 10 else { throw .truncated(format: .gif, byteCount: bytes.count) }
        let width = Int(bytes[6]) | Int(bytes[7]) << 8
        let height = Int(bytes[8]) | Int(bytes[9]) << 8
        return try Self.image(.gif, width: width, height: height)
    }

    private static func image(_ format: ImageFormat, width: Int, height: Int) throws(ImageDecodingError) -> DecodedImage
    {
        guard width > 0, height > 0 else { throw .emptyImage(format: format) }
        return DecodedImage(format: format, width: width, height: height)
    }
}

/// Why ``ImageDecoder`` could not read an image header.
public enum ImageDecodingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The bytes start with neither a PNG nor a GIF signature.
    case unknownFormat(byteCount: Int)
    /// The signature was found, but the header ends after `byteCount` bytes.
    case truncated(format: ImageFormat, byteCount: Int)
    /// The header gives a width or a height of zero.
    case emptyImage(format: ImageFormat)

    /// What went wrong, in one sentence.
    public var description: String {
        switch self {
        case .unknownFormat(let byteCount):
            "the \(byteCount) bytes start with neither a PNG nor a GIF signature"
        case .truncated(let format, let byteCount):
            "the \(format.rawValue) header ends after \(byteCount) bytes, before the image size"
        case .emptyImage(let format):
            "the \(format.rawValue) header gives a width or a height of zero"
        }
    }
}
