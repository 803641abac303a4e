#!/usr/bin/env bash
# Runs the service on its embedded defaults: installs the PostgreSQL server binaries
# when missing (as root), builds, and starts `sandbox-api serve` with a private
# PostgreSQL cluster under ./.sandbox. Extra arguments go to `sandbox-api serve`.
set -euo pipefail
cd "$(dirname "$0")/.."

have_postgres() {
  command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1
}
missing=()
have_postgres || missing+=(postgresql)
command -v buildah >/dev/null 2>&1 || missing+=(buildah)
PATH="$PATH:/usr/sbin:/sbin" command -v ip >/dev/null 2>&1 || missing+=(iproute2)
# A run's workspace is an ext4 filesystem of its profile's size (mkfs.ext4).
PATH="$PATH:/usr/sbin:/sbin" command -v mkfs.ext4 >/dev/null 2>&1 || missing+=(e2fsprogs)
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

exec cargo run --release -p api --bin sandbox-api -- serve "$@"
