// swift-tools-version:6.2
import PackageDescription

let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "TaskDispatch",
    platforms: [
        // `Duration` (the delay type) sets the floor: macOS 13, iOS 16, tvOS 16, watchOS 9.
        .macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9), .visionOS(.v1),
    ],
    products: [
        .library(name: "TaskDispatch", targets: ["TaskDispatch"]),
        .library(name: "TaskDispatchTesting", targets: ["TaskDispatchTesting"]),
        .library(name: "TaskDispatchTestingTraits", targets: ["TaskDispatchTestingTraits"]),
        .executable(name: "feed-demo", targets: ["FeedDemo"]),
        .executable(name: "task-dispatch-benchmark", targets: ["TaskDispatchBenchmark"]),
    ],
    targets: [
        .target(name: "TaskDispatch", swiftSettings: strictSettings),
        .target(name: "TaskDispatchTesting", dependencies: ["TaskDispatch"], swiftSettings: strictSettings),
        // Imports Testing, which ships with the toolchain: no package dependency.
        .target(
            name: "TaskDispatchTestingTraits",
            dependencies: ["TaskDispatch", "TaskDispatchTesting"],
            swiftSettings: strictSettings
        ),
        .target(name: "FeedExample", dependencies: ["TaskDispatch"], swiftSettings: strictSettings),
        .target(name: "ImageExample", dependencies: ["TaskDispatch"], swiftSettings: strictSettings),
        .executableTarget(
            name: "FeedDemo",
            dependencies: ["FeedExample", "TaskDispatch"],
            resources: [.copy("Resources/feeds")],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "TaskDispatchBenchmark",
            dependencies: ["TaskDispatch", "TaskDispatchTesting"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "TaskDispatchTests",
            dependencies: ["TaskDispatch", "TaskDispatchTesting"],
            exclude: ["Documents.txt"],  // read by DocumentationSnippetTests and .ci/documents, not built
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "TaskDispatchTestingTests",
            dependencies: ["TaskDispatch", "TaskDispatchTesting"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "TaskDispatchTestingTraitsTests",
            dependencies: ["TaskDispatch", "TaskDispatchTesting", "TaskDispatchTestingTraits"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "TaskDispatchXCTests",
            dependencies: ["TaskDispatch", "TaskDispatchTesting"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "FeedExampleTests",
            dependencies: ["FeedExample", "TaskDispatch", "TaskDispatchTesting"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "ImageExampleTests",
            dependencies: ["ImageExample", "TaskDispatch", "TaskDispatchTesting"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "StressTests",
            dependencies: ["TaskDispatch", "TaskDispatchTesting", "TaskDispatchTestingTraits"],
            swiftSettings: strictSettings
        ),
    ]
)
