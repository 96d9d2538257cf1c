// Versions of the Subject projector (spec §10.4, §12.6): recorded with every projection
// row and snapshot; replay under other versions refuses to run unless told how.
export const SUBJECT_PROJECTOR_VERSION = '1.0.0';
export const STATE_MACHINE_VERSION = '1.0.0';
