// The rooms of the code (docs/architecture.md): one folder each, listed from the innermost out,
// with the rooms each may import. This is the floor plan's one source: the architecture test
// (test/architecture/rooms.test.ts) holds every import of every production file to it and holds
// docs/architecture.md's table to it, and the isolation copy of the code (controller/isolation.ts)
// takes from it the rooms a child process loads.

export const ROOMS = {
  /** Pieces every room stands on: the error base with its exit code, text helpers, file publishing. */
  foundation: [],
  /** The fixed formats (DESIGN §4): envelopes, the event catalogue, hashes, signatures. */
  schema: ['foundation'],
  /** The pure fold of events into the subject's state. */
  projector: ['foundation', 'schema'],
  /** The one process that writes a store: the hash chain, the socket, replay, the store verifier. */
  writer: ['foundation', 'schema', 'projector'],
  /** The subject's process: the wake loop, its tools, the model adapters. */
  runtime: ['foundation', 'schema', 'projector', 'writer'],
  /** The experiment's design as files state it: pre-registration, scenario, plan, manifest, the run contract. */
  design: ['foundation', 'schema', 'projector', 'writer', 'runtime'],
  /** The controller process: runs an instance, supervises the writer and the runtime, signs heads. */
  controller: ['foundation', 'schema', 'projector', 'writer', 'runtime', 'design'],
  /** Read-only checks of a run against its plan and the run contract (beside writer's store verifier). */
  verification: ['foundation', 'schema', 'projector', 'writer', 'design'],
  /** The study folder's contract, pure: its layout and plan files, the batch plan, the replicates' names and seeds. */
  'study-contract': ['foundation', 'schema', 'design'],
  /** An instance's 72 simulated hours as a picture: its events laid out on lanes, drawn as inline SVG; pure. */
  timeline: ['foundation', 'schema', 'design'],
  /** Scoring against the pre-registered oracle; the study's statistics and its report's format. */
  oracle: ['foundation', 'schema', 'projector', 'writer', 'design', 'verification', 'study-contract'],
  /** The blind review package, its leak check, the reviewers' scorecard and unblinding. */
  'blind-review': ['foundation', 'schema', 'projector', 'writer', 'design', 'verification', 'study-contract', 'oracle'],
  /** The audit desk: a read-only web view of run folders. */
  audit: ['foundation', 'schema', 'projector', 'writer', 'design', 'verification', 'study-contract', 'timeline', 'oracle', 'blind-review'],
  /** A study end to end: plan, runner, blocks, report, recompute, resume, and the batch (plan, task, merge, status). */
  study: ['foundation', 'schema', 'projector', 'writer', 'runtime', 'design', 'controller', 'verification', 'study-contract', 'timeline', 'oracle'],
  /** The fault harness: runs instances with faults planted and checks what must survive them; owns its scripted model server. */
  faults: ['foundation', 'schema', 'projector', 'writer', 'runtime', 'design', 'controller', 'verification', 'oracle'],
  /** The commands a person runs and their framework: flags, outcome, exit. */
  cli: ['foundation', 'schema', 'projector', 'writer', 'runtime', 'design', 'controller', 'verification', 'study-contract', 'oracle', 'blind-review', 'audit', 'study', 'faults'],
} as const satisfies Record<string, readonly string[]>;

export type Room = keyof typeof ROOMS;

export const ROOM_NAMES = Object.keys(ROOMS) as Room[];

/** A room and every room it may import, directly or through another. */
export function roomsBelow(room: Room): Room[] {
  const seen = new Set<Room>();
  const visit = (r: Room): void => {
    if (seen.has(r)) return;
    seen.add(r);
    for (const below of ROOMS[r] as readonly Room[]) visit(below);
  };
  visit(room);
  return ROOM_NAMES.filter((r) => seen.has(r));
}
