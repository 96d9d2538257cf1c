// One experiment instance, end to end (issue 4; DESIGN §2, §8): the controller's side, and the
// door every caller uses (the CLIs, the study runner, the benches, the tests). The work is split
// by job, each file saying its own part:
//   instance-start.ts      runNewInstance / resumeInstance: what they check and write before the
//                          writer starts (resume-checks.ts: the store's read-only pre-check)
//   instance.ts            one run: writer up, progress read back, prepare, runtime up, the wake
//                          sequence, seal + final head
//   instance-ending.ts     every other end, one path: the open wake ended 'stopped', the stop
//                          recorded, the head signed — or said why it could not be (resume)
//   instance-processes.ts  ds-writer and ds-runtime: spawn, connect, stop, shut down, restart
//   wake-sequence.ts       the wakes in order, each one's steps as the run contract scripts them
//                          (design/run-contract.ts), the pause rule; runtime-wake.ts: one wake
//                          of the runtime raced against the stop
//   crash-drills.ts        the planned runtime and writer crashes, only on a wake that plans one
//   model-check.ts         the model against the plan before anything is written (prompt-bounds.ts)
//   written-interventions.ts, instance-progress.ts, controller-events.ts: what the store holds,
//                          what the controller writes
export { resumeInstance, runNewInstance } from './instance-start.js';
export { InstanceError, type InstanceErrorCode } from './instance-error.js';
export { checkModelBeforeStart, type ModelCheck } from './model-check.js';
export { ModelCheckError } from './model-check-error.js';
export type { CommonOptions, Group, InstanceResult, NewInstanceOptions, ResumeOptions, WakeStopOrder } from './instance-options.js';
export { CHILD_STOP_TIMEOUT_MS, MAX_WRITER_RESTARTS } from './instance-processes.js';
export { INSTANCE_SNAPSHOT_EVERY_EVENTS } from './writer-session.js';
