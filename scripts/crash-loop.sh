#!/usr/bin/env bash
# The crash loop (api/tests/crash_loop/) at length: SECONDS_TO_RUN (default 300)
# of WORKERS (default 8) writers while the server is killed every few seconds and
# PostgreSQL is stopped in immediate mode once. Needs buildah and busybox-static
# (scripts/test.sh installs them); the server runs on an embedded cluster of its
# own. Prints the counts.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
CRASH_LOOP_SECONDS="${SECONDS_TO_RUN:-300}" CRASH_LOOP_WORKERS="${WORKERS:-8}" \
  cargo test -p api --test crash_loop -- --nocapture
