#!/usr/bin/env bash
# The seeded simulation of the executor queue and the projector
# (domain/tests/simulation/) over many seeds: SEEDS (default 100000) from
# FIRST_SEED (default 1), release build. A failure prints its seed; replay it
# with `SIM_SEED=<seed> cargo test -p domain --test simulation -- --nocapture`.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
SIM_SEEDS="${SEEDS:-100000}" SIM_FIRST_SEED="${FIRST_SEED:-1}" \
  cargo test --release -p domain --test simulation -- --nocapture --exact \
  the_queue_and_the_projector_keep_their_invariants_under_every_schedule
