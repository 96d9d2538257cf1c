// npm run prereg -- lock FILE [--key-dir DIR] [--json]
// npm run prereg -- check FILE [--key-dir DIR] [--json]
// lock: signs FILE's hash into FILE.lock.dsse.json with the controller key (made on first
// use). check: is FILE valid, locked by that key, and unchanged since?
// Exit 0 when done / valid and locked, 1 when refused (schema, existing lock, unlocked,
// changed, wrong key, bad signature), 2 when the command itself was misused.
import { checkPreregLock, lockPrereg, PreregInputError, readPreregJson } from '../../controller/prereg.js';
import { KeyStoreError, loadOrCreateControllerKey, type ControllerKey } from '../../controller/key-store.js';
import { parseCommandLine } from './command-line.js';

const USAGE = `usage: npm run prereg -- lock FILE [--key-dir DIR] [--json]
       npm run prereg -- check FILE [--key-dir DIR] [--json]
  lock     sign FILE's content hash into FILE.lock.dsse.json (never replaces a lock; a lock by
           this key of this very content is left as it is, exit 0)
  check    exit 0 only when FILE passes the schema and a lock by the controller key covers its content
  --key-dir  the controller's key folder (default $XDG_CONFIG_HOME/digital-subject-runtime/keys)`;

const SUBCOMMANDS = ['lock', 'check'] as const;
type Subcommand = (typeof SUBCOMMANDS)[number];

function isSubcommand(word: string | undefined): word is Subcommand {
  return SUBCOMMANDS.some((s) => s === word);
}

function main(): number {
  const subcommand = process.argv[2];
  if (subcommand === '--help' || subcommand === '-h') {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (!isSubcommand(subcommand)) {
    process.stderr.write(`prereg: give a subcommand, lock or check${subcommand === undefined ? '' : ` (got ${JSON.stringify(subcommand)})`}\n${USAGE}\n`);
    return 2;
  }
  // parseCommandLine reads process.argv; drop the subcommand so FILE is the one positional.
  process.argv.splice(2, 1);
  const cli = parseCommandLine(USAGE, { json: { type: 'boolean' }, 'key-dir': { type: 'string' } }, 'pre-registration file');
  if (!cli.ok) return cli.exitCode;
  const { values, target: file } = cli;
  const json = values.json ?? false;
  try {
    // A missing or non-JSON file is reported before the key folder is touched, so a typo never mints a key.
    readPreregJson(file);
    // check never mints a key: a missing key is a wrong --key-dir, not a first use.
    const key = loadOrCreateControllerKey(values['key-dir'], { create: subcommand === 'lock' });
    return subcommand === 'lock' ? lock(file, key, json) : check(file, key, json);
  } catch (error) {
    if (error instanceof PreregInputError || error instanceof KeyStoreError) {
      process.stderr.write(`prereg: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
}

function lock(file: string, key: ControllerKey, json: boolean): number {
  const outcome = lockPrereg(file, key.keys, new Date().toISOString());
  if (json) {
    process.stdout.write(`${JSON.stringify({ ...outcome, key_dir: key.keyDir, key_created: key.created })}\n`);
  } else if (outcome.ok) {
    if (key.created) process.stdout.write(`made a new controller key in ${key.keyDir} (keyid ${key.keyId})\n`);
    process.stdout.write(
      outcome.already_locked
        ? `already locked ${file}: ${outcome.lock.prereg_sha256} at ${outcome.lock.locked_at} by keyid ${outcome.keyid}; content unchanged, nothing written\n`
        : `locked ${file}: ${outcome.lock.prereg_sha256}, signed by keyid ${outcome.keyid} into ${outcome.lock_file}\n`,
    );
  } else {
    process.stdout.write(`REFUSED (${outcome.problem}): ${outcome.message}\n${outcome.issues.map((i) => `  ${i}\n`).join('')}`);
  }
  return outcome.ok ? 0 : 1;
}

function check(file: string, key: ControllerKey, json: boolean): number {
  const result = checkPreregLock(file, key.keys.publicKey);
  if (json) {
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } else if (result.ok) {
    process.stdout.write(`OK: ${file} is valid and locked (${result.prereg_sha256}, locked at ${result.locked_at} by keyid ${result.keyid})\n`);
  } else {
    process.stdout.write(`REFUSED ${file} (${result.failures.length} problem(s)):\n${result.failures.map((f) => `  ${f.problem}: ${f.message}\n`).join('')}`);
  }
  return result.ok ? 0 : 1;
}

process.exitCode = main();
