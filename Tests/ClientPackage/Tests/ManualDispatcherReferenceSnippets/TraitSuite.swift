import TaskDispatchTestingTraits
import Testing

@Suite(.verifiesIdleDispatchers) struct FeedModelTests {
    // the suite's tests: each dispatcher they create is checked when the test ends
}
