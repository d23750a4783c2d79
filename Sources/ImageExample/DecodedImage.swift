/// An image whose header has been decoded: its format and its size in pixels.
///
/// The example decodes only the header, so it needs no image library; a real app would hold pixels here.
///
/// ```swift
/// let image = try ImageDecoder.decode(bytes)
/// print(image.format, image.width, image.height)   // png 640 480
/// ```
public struct DecodedImage: Sendable, Hashable {
    /// The file format the bytes were in.
    public var format: ImageFormat
    /// The width in pixels.
    public var width: Int
    /// The height in pixels.
    public var height: Int

    /// Creates a decoded image.
    ///
    /// - Parameters:
    ///   - format: The file format the bytes were in.
    ///   - width: The width in pixels.
    ///   - height: The height in pixels.
    public init(format: ImageFormat, width: Int, height: Int) {
        self.format = format
        self.width = width
        self.height = height
    }
}

/// The image file formats ``ImageDecoder`` recognises.
public enum ImageFormat: String, Sendable, Hashable {
    /// Portable Network Graphics: the signature, then the `IHDR` chunk with a big-endian width and height.
    case png
    /// Graphics Interchange Format: `GIF87a` or `GIF89a`, then a little-endian width and height.
    case gif
}
