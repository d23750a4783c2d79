/// Where an ``ImageLoader`` gets the bytes of an image: the network, a bundle, or a test's table.
///
/// ``ImageLoader`` calls ``imageData(for:)`` on a background thread, so it may block.
///
/// ```swift
/// struct TableImageSource: ImageSource {
///     let files: [String: [UInt8]]
///     func imageData(for id: String) throws -> [UInt8] {
///         guard let bytes = files[id] else { throw ImageNotFound(id: id) }
///         return bytes
///     }
/// }
/// ```
public protocol ImageSource: Sendable {
    /// Returns the bytes of the image with the given identifier.
    ///
    /// Called on a background thread; blocking is fine.
    ///
    /// - Parameter id: The image's identifier, such as `"123"`.
    /// - Returns: The image file's bytes.
    /// - Throws: Any error when the image cannot be fetched right now; ``ImageLoader`` retries it.
    func imageData(for id: String) throws -> [UInt8]
}
