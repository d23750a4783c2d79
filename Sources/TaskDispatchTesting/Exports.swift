// Tests import `TaskDispatchTesting` alone: the dispatch verbs they call on a `ManualDispatcher` come from
// `TaskDispatch`, re-exported so that they resolve with the `MemberImportVisibility` upcoming feature on.
@_exported public import TaskDispatch
