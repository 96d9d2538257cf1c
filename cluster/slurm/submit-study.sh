#!/bin/bash
# Plans a study and submits it to Slurm (docs/cluster.md):
#   1. `npm run study -- --plan-only --out STUDY ...`: study.json + its signature, nothing run
#   2. round 1 as one job array, one task per block (replicate k+1's A, B and C side by side in
#      lockstep): sbatch --array=0-(n-1)[%K] study-task.sbatch
#   3. the expansion decision (and, without a round 2, the merge) as a job that starts once every
#      round-1 task has ended: sbatch --dependency=afterany:ROUND1 study-expand.sbatch
# Prints the job ids. Run it from anywhere on a login node whose file systems the compute
# nodes share (the repository checkout, the study folder, the key folder). With a model that
# calls a server (--model openai|local, --model-config), step 1 checks that server before it
# writes the plan (docs/cluster.md "What an instance will cost"): the login node must reach it.
#
# usage: cluster/slurm/submit-study.sh STUDY [--plan-only options: --n N --seed S --study-id ID
#          --key-dir KEYS --prereg FILE --start-at ISO --same-uid REASON --allow-key PUB ... --model ...]
# Environment: DS_LOGS (default STUDY.logs), DS_SBATCH_ARGS (extra sbatch options for every job,
# split on spaces, e.g. "--partition=short --account=lab --time=01:00:00"), DS_SCRATCH,
# DS_MAX_REQUEUES, DS_NODE (passed on to the jobs); DS_ARRAY_LIMIT=K: at most K blocks at once
# (`--array=RANGE%K`, round 2 too), for blocks sharing one model server: K x min(3, the plan's
# --parallel-slots) must not exceed the server's slots (docs/cluster.md "Blocks sharing a server").
# Why afterany and not afterok: a task that ended 1 or 2 would leave an afterok job pending
# forever (DependencyNeverSatisfied) with nothing said about which instance; the expand and
# merge steps check completeness themselves and exit 3 naming what is missing.
# Exit: 0 submitted · 2 usage, or the plan was refused (nothing submitted) · 1 a submission failed.
set -uo pipefail

say() { echo "submit-study: $*"; }
usage() { echo "usage: cluster/slurm/submit-study.sh STUDY [--plan-only options: --n N --seed S --study-id ID --key-dir KEYS --prereg FILE --same-uid REASON --allow-key PUB ...]" >&2; exit 2; }
(( $# >= 1 )) || usage
[[ $1 != -* ]] || usage
study=$(realpath -m -- "$1"); shift
repo=$(cd "$(dirname "$0")/../.." && pwd)
jobs=$repo/cluster/slurm
logs=$(realpath -m -- "${DS_LOGS:-$study.logs}")
node_bin=${DS_NODE:-node}
command -v sbatch >/dev/null || { say "sbatch not found: run this on a Slurm login node"; exit 2; }
limit=
if [[ -n ${DS_ARRAY_LIMIT:-} ]]; then
  [[ $DS_ARRAY_LIMIT =~ ^[1-9][0-9]{0,5}$ ]] || { say "DS_ARRAY_LIMIT must be a whole number of blocks at once (1 or more), is '$DS_ARRAY_LIMIT'; nothing planned or submitted"; exit 2; }
  limit=%$DS_ARRAY_LIMIT
fi

# The CLI runs from the repository (tsx is found from the working directory), so a relative
# path given to a path option is made absolute first, against the caller's directory. The jobs
# need the key folder too: taken from the plan's own options.
key_dir=${DS_KEY_DIR:-}
args=("$@")
for (( i = 0; i + 1 < ${#args[@]}; i++ )); do
  case ${args[i]} in
    --key-dir | --prereg | --allow-key | --model-config | --model-file | --replay-from)
      args[i+1]=$(realpath -m -- "${args[i+1]}")
      [[ ${args[i]} == --key-dir ]] && key_dir=${args[i+1]} ;;
  esac
done

cd "$repo" || exit 2
say "planning $study"
plan=$("$node_bin" --import tsx cli/study.ts --plan-only --out "$study" "${args[@]}" --json)
rc=$?
if (( rc != 0 )); then
  echo "$plan"
  say "the plan was refused (exit $rc, the reason is above); nothing submitted"
  exit "$rc"
fi
field() { printf '%s' "$plan" | "$node_bin" -e 'const j = JSON.parse(require("fs").readFileSync(0, "utf8")); const v = j[process.argv[1]]; if (typeof v !== "string") process.exit(1); process.stdout.write(v);' "$1"; }
array=$(field array) || { echo "$plan"; say "--plan-only --json gave no array range"; exit 1; }
# What one task runs: a block for every plan this build writes (the JSON says so).
unit=$(field task_unit) || unit=block
say "plan written; round 1 is array $array, one task per $unit"

mkdir -p "$logs" || { say "cannot create the log folder $logs"; exit 1; }
export DS_STUDY=$study DS_REPO=$repo DS_LOGS=$logs DS_JOBS=$jobs DS_TASK_UNIT=$unit
[[ -n $key_dir ]] && export DS_KEY_DIR=$key_dir
read -r -a extra <<< "${DS_SBATCH_ARGS:-}"

round1=$(sbatch --parsable --array="$array$limit" --output="$logs/ds-task-%A_%a.out" "${extra[@]}" "$jobs/study-task.sbatch") \
  || { say "submitting round 1 failed (the plan stays; resubmit: DS_STUDY=$study sbatch --array=$array$limit $jobs/study-task.sbatch)"; exit 1; }
round1=${round1%%;*}
say "round 1: job $round1, array $array$limit"
expand=$(sbatch --parsable --dependency="afterany:$round1" --output="$logs/ds-expand-%j.out" "${extra[@]}" "$jobs/study-expand.sbatch") \
  || { say "submitting the expand step failed; submit it by hand: DS_STUDY=$study sbatch --dependency=afterany:$round1 $jobs/study-expand.sbatch"; exit 1; }
expand=${expand%%;*}
say "expand/merge: job $expand (after job $round1)"
say "logs in $logs; progress: npm run study -- --status $study"
echo "round1_job=$round1 expand_job=$expand array=$array"
