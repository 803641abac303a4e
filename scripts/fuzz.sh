#!/usr/bin/env bash
# Runs each fuzz target of domain/tests/fuzz.rs (archives, Dockerfiles, run inputs,
# row policies, formulas) for a set time (SECONDS_PER_TARGET, default 60): rounds
# of CASES cases (default 5000), each round with the next seed, until the time is
# spent. Prints the cases run per target; on a failure, the seed that found it
# (replay with PROPTEST_RNG_SEED=<seed>) and proptest keeps the shrunk case in
# domain/proptest-regressions/ for every later run.
set -euo pipefail
cd "$(dirname "$0")/.."

per_target="${SECONDS_PER_TARGET:-60}"
cases="${CASES:-5000}"
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
cargo test --quiet --release -p domain --test fuzz --no-run
targets=(archives_of_arbitrary_bytes damaged_contexts dockerfiles_edited
  dockerfiles_of_arbitrary_text run_inputs_canonicalize_once row_policies formulas_of_any_text)
for target in "${targets[@]}"; do
  deadline=$((SECONDS + per_target))
  seed=1
  total=0
  while [ "$SECONDS" -lt "$deadline" ]; do
    if ! PROPTEST_CASES="$cases" PROPTEST_RNG_SEED="$seed" \
      cargo test --quiet --release -p domain --test fuzz -- --exact "$target" >/tmp/fuzz-$$.log 2>&1; then
      cat /tmp/fuzz-$$.log
      echo "$target: FAILED with PROPTEST_RNG_SEED=$seed" >&2
      exit 1
    fi
    total=$((total + cases))
    seed=$((seed + 1))
  done
  echo "$target: $total cases, 0 failures"
done
rm -f /tmp/fuzz-$$.log
