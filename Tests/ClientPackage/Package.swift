// swift-tools-version:6.2
// A user's package, outside TaskDispatch: it sees only the public API, with the imports the README shows and the
// upcoming features a careful user turns on. `.ci/run` builds and tests it.
//
// `ClientTests` holds the README's and the adoption articles' code; each older DocC article has a test target of
// its own, so that two articles can each declare the model they explain under the same name, verbatim.
import PackageDescription

let settings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .enableUpcomingFeature("NonisolatedNonsendingByDefault"),
    .enableUpcomingFeature("InferIsolatedConformances"),
]

let dependencies: [Target.Dependency] = [
    .product(name: "TaskDispatchTesting", package: "TaskDispatch"),
    .product(name: "TaskDispatchTestingTraits", package: "TaskDispatch"),
]

/// The test targets, one per group of articles whose snippets they compile.
let articleTargets = [
    "GettingStartedSnippets",
    "TaskDispatchLandingPageSnippets",
    "TaskDispatchTestingLandingPageSnippets",
    "ProductionDispatchersSnippets",
    "DispatcherContractSnippets",
    "ManualDispatcherReferenceSnippets",
    "TestingAsyncCodeSnippets",
    "VirtualTimeAndOrderSnippets",
    "WritingYourOwnDispatcherSnippets",
]

let package = Package(
    name: "Client",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9), .visionOS(.v1)],
    dependencies: [.package(name: "TaskDispatch", path: "../..")],
    targets: [.testTarget(name: "ClientTests", dependencies: dependencies, swiftSettings: settings)]
        + articleTargets.map { .testTarget(name: $0, dependencies: dependencies, swiftSettings: settings) }
        // A module that is main-actor by default, as a new Xcode app target is ("Getting started").
        + [
            .testTarget(
                name: "MainActorByDefaultSnippets", dependencies: dependencies,
                swiftSettings: settings + [.defaultIsolation(MainActor.self)])
        ]
)
