// Versions of the Subject projector (spec §10.4, §12.6): recorded with every projection
// row and snapshot; replay under other versions refuses to run unless told how.
// 1.1.0: SystemEvent.StoreSealed passes through (before, the type did not exist and was refused).
export const SUBJECT_PROJECTOR_VERSION = '1.1.0';
// 1.1.0: STOPPED --SystemEvent.Resumed--> DORMANT (an operator resumes an emergency stop).
export const STATE_MACHINE_VERSION = '1.1.0';
