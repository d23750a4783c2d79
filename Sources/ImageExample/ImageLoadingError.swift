/// Why an ``ImageLoader`` delivered no image.
public enum ImageLoadingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Every fetch failed; `attempts` fetches were made, and `lastError` describes the last failure.
    case fetchFailed(attempts: Int, lastError: String)
    /// The bytes arrived but are not an image.
    case undecodable(ImageDecodingError)

    /// What went wrong, in one sentence.
    public var description: String {
        switch self {
        case .fetchFailed(let attempts, let lastError):
            "the image could not be fetched after \(attempts) attempts; the last failed with: \(lastError)"
        case .undecodable(let error):
            "the image could not be decoded: \(error)"
        }
    }
}
