// Names of the files in a run folder that independent tools read (docs/format.md).
export const RUN_FILES = {
  store: 'events.db',
  /** The controller's Ed25519 public key, 64 lowercase hex digits. */
  publicKey: 'controller.pub',
  /** One DSSE envelope of a signed chain head per line, oldest first. */
  heads: 'heads.jsonl',
  manifest: 'manifest.dsse.json',
  /** The run's ExperimentPlan (design/experiment-plan.ts) as JSON.stringify(plan, null, 2). */
  plan: 'plan.json',
  /** The scenario as the run started with it: definition and starting files' hashes, canonical JSON (design/scenario.ts RunScenario); the manifest's scenario_sha256 is sha256 of its bytes (1.3.0). */
  scenario: 'scenario.json',
  /** The pre-registration the run ran under (JSON), and a copy of its signed lock (design/prereg.ts). */
  prereg: 'prereg.json',
  preregLock: 'prereg.lock.dsse.json',
  /** Which model the instance thinks with (design/model-choice.ts); names an API key's variable, never the key. */
  model: 'model.json',
  /** The model configuration file the instance was started with (--model-config), byte for byte; its sha256 is the manifest's model.config_sha256. */
  modelConfig: 'model-config.json',
  /** One line per start of the runtime: the model adapter's check before the first wake (issue 15 item 5). */
  preflight: 'preflight.jsonl',
  /** In a study: every line its controller, writer and runtime printed, appended as they ran (not evidence: nothing checks or signs it). */
  processLog: 'processes.log',
  /** The subject's files. */
  workspace: 'workspace',
  dsseSuffix: '.dsse.json',
} as const;

export const MANIFEST_PAYLOAD_TYPE = 'application/vnd.digital-subject.manifest+json';
