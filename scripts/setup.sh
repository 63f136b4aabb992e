#!/usr/bin/env bash
# Brings a fresh machine to the point where the demo and the tests can run: Node dependencies, a PostgreSQL
# on 127.0.0.1:5432 (or DATABASE_URL's), Debian's Chromium and nats-server, the Temporal CLI, Mailpit,
# Toxiproxy and Jaeger. Sourced by demo.sh, cluster.sh, test.sh and test-cluster.sh. The slow parts — the Go builds
# (minutes on a cold Go cache) and apt — start first, in the background, while npm ci runs; setup_wait waits
# for them. With SETUP_DEFER_WAIT=1 (test.sh) the caller does other work first (typecheck, lint) and calls
# setup_wait itself. Each step is marked as a phase (scripts/timing.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="/usr/local/go/bin:$PWD/bin:$PATH"
source scripts/go-binaries.sh

step() { printf '\033[1m▸ %s\033[0m\n' "$*" >&2; }

# 0. The Go builds (scripts/go-binaries.sh): the Temporal CLI, Mailpit, Toxiproxy, Jaeger, each only if missing.
start_tool_builds

# 0b. Debian's packages the machine lacks, in one apt run in the background: nats-server (the tests start
#     one if none answers on 4222), PostgreSQL (only if there is neither a server answering nor a cluster to
#     start), Chromium (the Web UI's browser tests; never a browser download), libfaketime (a worker whose clock
#     runs ahead of PostgreSQL's: test/in-flight-window.test.ts and the chaos run's skewed worker).
pg_ready() { command -v pg_isready >/dev/null && pg_isready -q -h 127.0.0.1 -p 5432; }
debs=()
command -v nats-server >/dev/null || debs+=(nats-server)
if ! pg_ready && ! ls /etc/postgresql/*/main >/dev/null 2>&1; then debs+=(postgresql); fi
if [ ! -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ] && [ "${SKIP_CHROMIUM:-}" != 1 ]; then debs+=(chromium); fi
[ -e /usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1 ] || debs+=(faketime)
apt_pid=
if [ ${#debs[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    step "installing ${debs[*]} from Debian's packages (in the background)"
    apt_log=$(mktemp)
    (timed "apt-get install ${debs[*]}" bash -c \
      'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"' _ "${debs[@]}" \
      >"$apt_log" 2>&1) &
    apt_pid=$!
  else
    echo "missing and not installable here (not root or no apt-get): ${debs[*]}" >&2
  fi
fi

# 1. Node dependencies, exactly as locked (npm 11 runs no install scripts; nothing here needs one).
# A node_modules that is a symlink belongs to another checkout (a worktree sharing main's): npm ci would empty it
# under everyone who shares it, so it is left to its owner.
if [ -L node_modules ]; then
  step "node_modules is a symlink ($(readlink node_modules)): npm ci left to the checkout that owns it"
elif [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  step "npm ci"
  timed "npm ci" npm ci --no-audit --no-fund --loglevel=error
fi

# 2.–4. Waits for apt and the Go builds, then starts PostgreSQL if it is down.
setup_wait() {
  if [ -n "$apt_pid" ]; then
    wait "$apt_pid" || { cat "$apt_log" >&2; echo "apt-get install ${debs[*]} failed" >&2; }
    rm -f "$apt_log"
    apt_pid=
  fi
  if ! pg_ready; then
    if command -v pg_ctlcluster >/dev/null && ls /etc/postgresql/*/main >/dev/null 2>&1; then
      step "starting PostgreSQL"
      local version
      version=$(ls /etc/postgresql | sort -V | tail -n 1)
      pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
    fi
    for _ in $(seq 1 30); do pg_ready && break; sleep 1; done
    pg_ready || { echo "PostgreSQL is not reachable on 127.0.0.1:5432; set DATABASE_URL to one that is" >&2; exit 1; }
  fi
  if [ ! -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ] && [ "${SKIP_CHROMIUM:-}" != 1 ]; then
    echo "Chromium is missing: install Debian's chromium (or set CHROMIUM_PATH)" >&2
  fi
  [ ${#go_build_pids[@]} -eq 0 ] || step "waiting for the Go builds"
  wait_go_builds || true
  # The Temporal CLI (dev server + Web UI): TEMPORAL_CLI, PATH, bin/ (stack/temporal-cli.ts).
  step "Temporal CLI: $(npx tsx stack/temporal-cli.ts)"
}
[ "${SETUP_DEFER_WAIT:-}" = 1 ] || setup_wait
