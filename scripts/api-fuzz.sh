#!/usr/bin/env bash
# The OpenAPI document against tools nobody here wrote (issue 27, item 6):
#   1. openapi-spec-validator checks the document;
#   2. openapi-python-client generates a Python client from it, and the README
#      walkthrough runs through that client (scripts/api-fuzz/walkthrough.py);
#   3. schemathesis fuzzes every operation as a company manager (phases examples,
#      coverage, fuzzing and stateful, seed 1): zero 500s is the bar; the summary
#      lists every finding.
# Starts its own throwaway PostgreSQL cluster and server; needs python3 with venv
# and the package index. MAX_EXAMPLES (default 20) and PHASES tune the fuzzer.
set -euo pipefail
cd "$(dirname "$0")/.."

venv="${API_FUZZ_VENV:-target/api-fuzz-venv}"
if [ ! -x "$venv/bin/st" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet schemathesis==4.32.0 openapi-spec-validator==0.9.0 \
    openapi-python-client==0.29.1
fi

export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
cargo build --quiet -p api --bin sandbox-api -p tools --bin sandboxctl
bin="${CARGO_TARGET_DIR:-target}/debug"

work=$(mktemp -d /tmp/api-fuzz-XXXXXX)
chmod 755 "$work"
server=""
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
  "$bin/sandboxctl" db cluster-stop "$work/cluster" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

export DATABASE_URL
DATABASE_URL=$("$bin/sandboxctl" db cluster-start "$work/cluster")
export SANDBOX_DATA_DIR="$work/data" SANDBOX_LISTEN="127.0.0.1:${API_FUZZ_PORT:-18091}"
base="http://$SANDBOX_LISTEN"
RUST_LOG=error "$bin/sandbox-api" serve >"$work/server.log" 2>&1 &
server=$!
for _ in $(seq 60); do curl -sf "$base/healthz" >/dev/null && break; sleep 1; done
"$bin/sandboxctl" directory apply docs/examples/directory.json >"$work/creds.json"
token=$("$venv/bin/python" -c 'import json,sys; print(json.load(open(sys.argv[1]))["companies"]["acme"]["users"]["boss"]["token"])' "$work/creds.json")
curl -sf "$base/openapi.json" >"$work/openapi.json"

echo "== openapi-spec-validator"
"$venv/bin/openapi-spec-validator" --validation-errors all "$work/openapi.json"

echo "== openapi-python-client and the walkthrough"
"$venv/bin/openapi-python-client" generate --path "$work/openapi.json" \
  --output-path "$work/client/sandbox_client" --meta none >"$work/generate.log" 2>&1 ||
  { cat "$work/generate.log"; exit 1; }
if grep -q "will not be generated" "$work/generate.log"; then
  cat "$work/generate.log"; exit 1
fi
PYTHONPATH="$work/client" "$venv/bin/python" scripts/api-fuzz/walkthrough.py "$base" "$token"

echo "== schemathesis"
# The event stream never ends, so it is left out; the report outlives the run.
report="${CARGO_TARGET_DIR:-target}/api-fuzz/schemathesis.log"
mkdir -p "$(dirname "$report")"
status=0
"$venv/bin/st" run "$base/openapi.json" -H "Authorization: Bearer $token" \
  --phases "${PHASES:-examples,coverage,fuzzing,stateful}" --seed 1 -w 2 \
  --max-examples "${MAX_EXAMPLES:-20}" --no-color \
  --checks not_a_server_error,response_schema_conformance,status_code_conformance,negative_data_rejection,positive_data_acceptance \
  --exclude-path-regex '/notifications/stream$' \
  >"$report" 2>&1 || status=$?
sed -n '/= SUMMARY =/,$p' "$report"
echo "every finding: $report"
errors=$(grep -c "Server error" "$report" || true)
echo "server errors (500) found: $errors"
if [ "$errors" != 0 ]; then
  grep -B2 -A12 "Server error" "$report" | head -200
  exit 1
fi
exit "$status"
