#!/usr/bin/env bash
# The whole test suite, on a fresh machine: installs what the tests need (as root),
# starts one throwaway PostgreSQL cluster for the run, runs every test against it
# (one database per test), then checks formatting and lints.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v buildah >/dev/null 2>&1 || missing+=(buildah)
command -v busybox >/dev/null 2>&1 || missing+=(busybox-static)
# A run's network namespace gets its loopback up with `ip` (iproute2).
PATH="$PATH:/usr/sbin:/sbin" command -v ip >/dev/null 2>&1 || missing+=(iproute2)
# A run's workspace is an ext4 filesystem of its profile's size (mkfs.ext4).
PATH="$PATH:/usr/sbin:/sbin" command -v mkfs.ext4 >/dev/null 2>&1 || missing+=(e2fsprogs)
# Independent clients in the tests (RSA-OAEP interop, HMAC-signed callbacks) are Python.
command -v python3 >/dev/null 2>&1 || missing+=(python3 python3-pip)
# The simulated cluster's kubelet runs the pod's stage and collect scripts with the
# host's curl and tar (api/tests/kube_cluster).
command -v curl >/dev/null 2>&1 || missing+=(curl)
command -v tar >/dev/null 2>&1 || missing+=(tar)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "missing packages: ${missing[*]} (run as root, or install them)" >&2
    exit 1
  fi
fi

# The secret interop test encrypts with an independent client: Python's cryptography.
python3 -c 'import cryptography' 2>/dev/null || python3 -m pip install --quiet cryptography
# The agent tools are driven by an independent MCP client: the `mcp` package.
python3 -c 'import mcp.client.streamable_http' 2>/dev/null \
  || python3 -m pip install --quiet 'mcp==2.3.0' \
  || python3 -m pip install --quiet --break-system-packages 'mcp==2.3.0'
# The S3 object store is tested against a real S3-compatible server: moto's.
python3 -c 'import moto.server' 2>/dev/null \
  || python3 -m pip install --quiet 'moto[server]==5.2.1' \
  || python3 -m pip install --quiet --break-system-packages 'moto[server]==5.2.1'

# A one-off build needs no incremental cache; leaving it out halves the disk it takes.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
cargo build --workspace --all-targets

sandboxctl="${CARGO_TARGET_DIR:-target}/debug/sandboxctl"
cluster=$(mktemp -d /tmp/sandbox-test-XXXXXX)
chmod 755 "$cluster"
stop_cluster() {
  status=$?
  if [ "$status" != 0 ] && [ -f "$cluster/postgres/postgres.log" ]; then
    # A failing run shows what the database said last, and how much disk was left.
    echo "--- the test cluster's log (last 40 lines) ---" >&2
    tail -n 40 "$cluster/postgres/postgres.log" >&2 || true
    df -h "$cluster" >&2 || true
  fi
  "$sandboxctl" db cluster-stop "$cluster" >/dev/null 2>&1 || true
  rm -rf "$cluster"
}
trap stop_cluster EXIT
TEST_DATABASE_URL=$("$sandboxctl" db cluster-start "$cluster")
export TEST_DATABASE_URL

cargo test --workspace -- "$@"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
echo "all tests passed"
