// Tests import `TaskDispatchTesting` alone: the dispatch verbs, handles and contexts they call on a
// `ManualDispatcher` come from `TaskDispatch`, which this re-exports, so they resolve even with the
// `MemberImportVisibility` upcoming feature on (the default in a future language mode).
@_exported public import TaskDispatch
