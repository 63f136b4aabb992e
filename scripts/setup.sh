#!/usr/bin/env bash
# Brings a fresh machine to the point where the demo and the tests can run: Node dependencies,
# a PostgreSQL on 127.0.0.1:5432 (or DATABASE_URL's), and a Temporal CLI. Sourced by demo.sh and test.sh.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="/usr/local/go/bin:$PWD/bin:$PATH"

step() { printf '\033[1m▸ %s\033[0m\n' "$*" >&2; }

# 0. The Temporal CLI build takes minutes on a cold Go cache: start it first, in the background, while npm,
#    PostgreSQL and Chromium set up (step 4 waits for it). Only when no CLI is found where step 4 looks.
cli_version=$(sed -n 's/^  version: \(v[0-9.]*\).*/\1/p' temporal.yaml | head -n 1)
cli_build_log=$(mktemp)
cli_build_pid=
if [ -z "${TEMPORAL_CLI:-}" ] && ! command -v temporal >/dev/null && [ ! -x bin/temporal ] && command -v go >/dev/null; then
  step "building the Temporal CLI ${cli_version} in the background (go install)"
  mkdir -p bin
  (GOBIN="$PWD/bin" GOFLAGS="-buildvcs=false" go install "github.com/temporalio/cli/cmd/temporal@${cli_version}" >"$cli_build_log" 2>&1) &
  cli_build_pid=$!
fi

# 0b. Mailpit and Toxiproxy for the real destinations (tests and demo), built at the same time (each
#     skipped when bin/ or PATH already has it); step 4 waits for them. nats-server is Debian's; the tests start one if none answers.
go_tool_pids=()
go_tool_logs=()
build_go_tool() { # <name in bin/> <module@version> <binary go install makes>
  if [ -x "bin/$1" ] || command -v "$1" >/dev/null || ! command -v go >/dev/null; then return; fi
  step "building $1 in the background (go install $2)"
  mkdir -p bin
  local log gobin
  log=$(mktemp)
  gobin=$(mktemp -d)
  (GOBIN="$gobin" GOFLAGS="-buildvcs=false" go install "$2" >"$log" 2>&1 && mv "$gobin/$3" "bin/$1"; rm -rf "$gobin") &
  go_tool_pids+=($!)
  go_tool_logs+=("$1:$log")
}
build_go_tool toxiproxy-server github.com/Shopify/toxiproxy/v2/cmd/server@v2.12.0 server
# Mailpit with its web UI (go install alone makes one whose UI is a blank page): scripts/build-mailpit.sh.
if [ ! -x bin/mailpit ] && ! command -v mailpit >/dev/null && command -v go >/dev/null; then
  step "building mailpit with its web UI in the background (scripts/build-mailpit.sh)"
  mailpit_log=$(mktemp)
  bash scripts/build-mailpit.sh bin/mailpit >"$mailpit_log" 2>&1 &
  go_tool_pids+=($!)
  go_tool_logs+=("mailpit:$mailpit_log")
fi
if ! command -v nats-server >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  step "installing nats-server from Debian's packages"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nats-server >/dev/null
fi

# 0c. Debian's libfaketime: the chaos run skews one worker's clock against PostgreSQL's (scripts/chaos/stack.ts).
if [ ! -e /usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  step "installing faketime (libfaketime) from Debian's packages"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq faketime >/dev/null
fi

# 1. Node dependencies, exactly as locked (npm 11 runs no install scripts; nothing here needs one).
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  step "npm ci"
  npm ci --no-audit --no-fund --loglevel=error
fi

# 2. PostgreSQL: use the one that answers; start the machine's cluster if it is down; install one if absent.
pg_ready() { command -v pg_isready >/dev/null && pg_isready -q -h 127.0.0.1 -p 5432; }
if ! pg_ready; then
  if ! ls /etc/postgresql/*/main >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      step "installing PostgreSQL from Debian's packages"
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    fi
  fi
  if command -v pg_ctlcluster >/dev/null && ls /etc/postgresql/*/main >/dev/null 2>&1; then
    step "starting PostgreSQL"
    version=$(ls /etc/postgresql | sort -V | tail -n 1)
    pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
  fi
  for _ in $(seq 1 30); do pg_ready && break; sleep 1; done
  pg_ready || { echo "PostgreSQL is not reachable on 127.0.0.1:5432; set DATABASE_URL to one that is" >&2; exit 1; }
fi

# 3. Debian's Chromium for the browser tests of the Web UI (never a browser download).
if [ ! -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ] && [ "${SKIP_CHROMIUM:-}" != 1 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    step "installing Chromium from Debian's packages"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "Chromium is missing and cannot be installed here: install Debian's chromium (or set CHROMIUM_PATH)" >&2
  fi
fi

# 4. The Temporal CLI (dev server + Web UI): TEMPORAL_CLI, PATH, bin/, else go install (cached by Go).
if [ -n "$cli_build_pid" ]; then
  wait "$cli_build_pid" || { cat "$cli_build_log" >&2; echo "building the Temporal CLI failed" >&2; }
fi
rm -f "$cli_build_log"
for i in "${!go_tool_pids[@]}"; do
  name=${go_tool_logs[$i]%%:*}
  log=${go_tool_logs[$i]#*:}
  wait "${go_tool_pids[$i]}" || { cat "$log" >&2; echo "building $name failed" >&2; }
  rm -f "$log"
done
step "Temporal CLI: $(npx tsx harness/temporal-cli.ts)"
