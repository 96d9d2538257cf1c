// npm run prereg -- lock FILE [--key-dir DIR] [--json]
// npm run prereg -- check FILE [--key-dir DIR] [--json]
// lock: signs FILE's hash into FILE.lock.dsse.json with the controller key (made on first
// use). check: is FILE valid, locked by that key, and unchanged since?
// Exit 0 when done / valid and locked, 1 when refused (schema, existing lock, unlocked,
// changed, wrong key, bad signature), 2 when the command itself was misused.
import { checkPreregLock, lockPrereg, readPreregJson } from '../design/prereg.js';
import { loadOrCreateControllerKey, type ControllerKey } from '../controller/key-store.js';
import { parseFlags, UsageError } from './command-line.js';
import { runCommand, type CommandOutput } from './command-outcome.js';
import { EXIT_CODES } from '../foundation/exit-codes.js';

const USAGE = `usage: npm run prereg -- lock FILE [--key-dir DIR] [--json]
       npm run prereg -- check FILE [--key-dir DIR] [--json]
  lock     sign FILE's content hash into FILE.lock.dsse.json (never replaces a lock; a lock by
           this key of this very content is left as it is, exit 0)
  check    exit 0 only when FILE passes the schema and a lock by the controller key covers its content
  --key-dir  the controller's key folder (default $XDG_CONFIG_HOME/digital-subject-runtime/keys)
exit: 0 locked / valid and locked · 1 refused (schema, existing lock, unlocked, changed, wrong key, bad signature) · 2 misuse (no such file, not JSON, no key in --key-dir)`;

const SUBCOMMANDS = ['lock', 'check'] as const;
type Subcommand = (typeof SUBCOMMANDS)[number];

function isSubcommand(word: string | undefined): word is Subcommand {
  return SUBCOMMANDS.some((s) => s === word);
}

function main(): CommandOutput | null {
  const subcommand = process.argv[2];
  if (subcommand === '--help' || subcommand === '-h') {
    process.stdout.write(`${USAGE}\n`);
    return null;
  }
  if (!isSubcommand(subcommand)) throw new UsageError(`give a subcommand, lock or check${subcommand === undefined ? '' : ` (got ${JSON.stringify(subcommand)})`}`);
  // parseFlags reads process.argv; drop the subcommand so FILE is the one positional.
  process.argv.splice(2, 1);
  const args = parseFlags(USAGE, { json: { type: 'boolean' }, 'key-dir': { type: 'string' } });
  if (args === null) return null;
  if (args.positionals.length !== 1) throw new UsageError(`give exactly one pre-registration file${args.positionals.length === 0 ? '' : `, got ${args.positionals.length}`}`);
  const file = args.positionals[0]!;
  // A missing or non-JSON file is reported before the key folder is touched, so a typo never mints a key.
  readPreregJson(file);
  // check never mints a key: a missing key is a wrong --key-dir, not a first use.
  const key = loadOrCreateControllerKey(args.values['key-dir'], { create: subcommand === 'lock' });
  return subcommand === 'lock' ? lock(file, key) : check(file, key);
}

function lock(file: string, key: ControllerKey): CommandOutput {
  const outcome = lockPrereg(file, key.keys, new Date().toISOString());
  const lines: string[] = [];
  if (outcome.ok) {
    if (key.created) lines.push(`made a new controller key in ${key.keyDir} (keyid ${key.keyId})`);
    lines.push(
      outcome.already_locked
        ? `already locked ${file}: ${outcome.lock.prereg_sha256} at ${outcome.lock.locked_at} by keyid ${outcome.keyid}; content unchanged, nothing written`
        : `locked ${file}: ${outcome.lock.prereg_sha256}, signed by keyid ${outcome.keyid} into ${outcome.lock_file}`,
    );
  } else {
    lines.push(`REFUSED (${outcome.problem}): ${outcome.message}`, ...outcome.issues.map((i) => `  ${i}`));
  }
  return { exitCode: outcome.ok ? EXIT_CODES.ok : EXIT_CODES.failed, json: { ...outcome, key_dir: key.keyDir, key_created: key.created }, text: lines.join('\n') };
}

function check(file: string, key: ControllerKey): CommandOutput {
  const result = checkPreregLock(file, key.keys.publicKey);
  const text = result.ok
    ? `OK: ${file} is valid and locked (${result.prereg_sha256}, locked at ${result.locked_at} by keyid ${result.keyid})`
    : `REFUSED ${file} (${result.failures.length} problem(s)):\n${result.failures.map((f) => `  ${f.problem}: ${f.message}`).join('\n')}`;
  return { exitCode: result.ok ? EXIT_CODES.ok : EXIT_CODES.failed, json: { ...result }, text };
}

runCommand('prereg', USAGE, main);
