// Versions of the Subject projector (spec §10.4, §12.6): recorded with every projection
// row and snapshot; replay under other versions refuses to run unless told how.
// 1.1.0: SystemEvent.StoreSealed passes through (before, the type did not exist and was refused).
// 1.2.0: file reads are executions (ExecutionIntentRecorded op 'read', ToolSucceeded.content,
// event schemas 1.1.0): a read intent must execute a read proposal, have no to_path and intend
// no change; a ToolSucceeded carries content exactly when its intent is a read, hashing to
// its observed_post_hash. No stream valid under 1.1.0 projects differently.
// 1.3.0 (issue 15, event schemas 1.1.0): a failed model call that reached a model spends the
// tokens its usage records (a misbehaving model is not cheap); ModelCallAttemptFailed (a
// transport attempt without an answer) belongs to the wake and spends nothing.
export const SUBJECT_PROJECTOR_VERSION = '1.3.0';
// 1.1.0: STOPPED --SystemEvent.Resumed--> DORMANT (an operator resumes an emergency stop).
// 1.2.0: STOPPED --SystemEvent.Resumed--> RECOVERING when an unknown tool outcome is open (it
// was refused, so no stream valid under 1.1.0 projects differently).
// 1.3.0: STOPPED / PAUSED --SystemEvent.OperatorResolved--> the same state (an operator settles an
// unknown outcome between a stop and the resume; it was refused, so no stream valid under 1.2.0
// projects differently).
export const STATE_MACHINE_VERSION = '1.3.0';
