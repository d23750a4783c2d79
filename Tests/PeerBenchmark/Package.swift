// swift-tools-version:6.2
// TaskDispatch beside its peers, on the same closures in one process: swift-nio's EmbeddedEventLoop and
// NIOAsyncTestingEventLoop, swift-clocks' TestClock with withMainSerialExecutor, and a bare lock-and-array FIFO.
// A nested package so that the main package keeps no dependencies; `.ci/run` builds it and runs it in quick mode.
import PackageDescription

let package = Package(
    name: "PeerBenchmark",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9), .visionOS(.v1)],
    dependencies: [
        .package(name: "TaskDispatch", path: "../.."),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/pointfreeco/swift-clocks", from: "1.1.1"),
        .package(url: "https://github.com/pointfreeco/swift-concurrency-extras", from: "1.4.3"),
    ],
    targets: [
        .executableTarget(
            name: "PeerBenchmark",
            dependencies: [
                .product(name: "TaskDispatchTesting", package: "TaskDispatch"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "Clocks", package: "swift-clocks"),
                .product(name: "ConcurrencyExtras", package: "swift-concurrency-extras"),
            ],
            swiftSettings: [
                .enableUpcomingFeature("ExistentialAny"),
                .enableUpcomingFeature("MemberImportVisibility"),
                .enableUpcomingFeature("InternalImportsByDefault"),
            ]
        )
    ]
)
