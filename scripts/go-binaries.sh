#!/usr/bin/env bash
# Sourced by setup.sh and cluster-build.sh: builds the Go binaries the suite, the demo and the cluster run,
# into the git-ignored bin/, each only when neither bin/ nor PATH (nor its *_BIN variable) has it. On a cold Go
# cache these builds are most of a fresh machine's set-up, so they run in the background, and in an order that
# lets Go's build cache serve one from another: the Temporal CLI first, then the cluster's server, schema tool
# and UI server from the same module (harness/temporal-binaries/go.mod: the versions the CLI is built with),
# whose packages are then almost all in the cache. Mailpit, Toxiproxy and Jaeger (the tracing test's OTLP receiver)
# are modules of their own.
go_binaries_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
go_binaries_module="$go_binaries_root/harness/temporal-binaries"
source "$go_binaries_root/scripts/timing.sh"

go_tool() { command -v go || { [ -x /usr/local/go/bin/go ] && echo /usr/local/go/bin/go; }; }

# No debug information, in the compiler or the linker: these binaries are run, never debugged here, and a cold
# build of the CLI costs about 9% less CPU without it (measured on go.temporal.io/server's SQLite persistence
# package and what it imports: 293 → 267 CPU-s). The cluster's binaries take the same flags, so the CLI's build
# cache serves them.
# stack/temporal-cli.ts (GO_BUILD_FLAGS) builds with the same, when it must build the CLI itself.
go_build_flags=(-gcflags=all=-dwarf=false "-ldflags=-s -w")

# build_go_binary <name in bin/> <package> <@version | module dir> [the name go install gives it]
# Builds into a scratch directory and moves the binary into place, so bin/<name> is whole or absent.
build_go_binary() {
  local name=$1 pkg=$2 from=$3 installed=${4:-$1} go scratch rc=0
  go=$(go_tool) || { echo "no Go toolchain to build $name" >&2; return 1; }
  mkdir -p "$go_binaries_root/bin"
  scratch=$(mktemp -d "$go_binaries_root/bin/.build-$name-XXXX")
  if [[ $from == @* ]]; then
    (cd "$scratch" && GOBIN="$scratch" GOFLAGS="${GOFLAGS:-} -buildvcs=false" "$go" install "${go_build_flags[@]}" "$pkg$from") || rc=$?
  else
    (cd "$from" && GOFLAGS="${GOFLAGS:-} -buildvcs=false" "$go" build "${go_build_flags[@]}" -o "$scratch/$installed" "$pkg") || rc=$?
  fi
  [ "$rc" = 0 ] && mv "$scratch/$installed" "$go_binaries_root/bin/$name"
  rm -rf "$scratch"
  return "$rc"
}

# needs_go_binary <name in bin/> [override variable's value]: whether nothing provides it yet.
needs_go_binary() {
  [ -z "${2:-}" ] && [ ! -x "$go_binaries_root/bin/$1" ] && ! command -v "$1" >/dev/null && go_tool >/dev/null
}

go_build_pids=()
go_build_names=()
go_build_logs=()
# go_build_in_background <name> <command…>: runs it as a timed phase, output kept for a failure.
go_build_in_background() {
  local name=$1 log
  shift
  log=$(mktemp)
  printf '\033[1m▸ building %s in the background\033[0m\n' "$name" >&2
  (timed "go build $name" "$@" >"$log" 2>&1) &
  go_build_pids+=("$!")
  go_build_names+=("$name")
  go_build_logs+=("$log")
}

build_cli() {
  local marker="$go_binaries_root/bin/.building-temporal"
  mkdir -p "$go_binaries_root/bin"
  echo "$BASHPID" >"$marker"
  # shellcheck disable=SC2064 # the path now: the function's locals are gone when the subshell exits
  trap "rm -f '$marker'" EXIT
  build_go_binary temporal github.com/temporalio/cli/cmd/temporal "$go_binaries_module"
}

# The CLI, Mailpit, Toxiproxy and Jaeger (what the dev-server suite and the demo need). While the CLI builds,
# bin/.building-temporal holds the build's PID: the cluster's build waits for it to share its cache.
start_tool_builds() {
  if [ -z "${TEMPORAL_CLI:-}" ] && needs_go_binary temporal; then
    go_build_in_background temporal build_cli
  fi
  # Mailpit with its web UI (go install alone makes one whose UI is a blank page): scripts/build-mailpit.sh.
  if needs_go_binary mailpit "${MAILPIT_BIN:-}"; then
    go_build_in_background mailpit bash "$go_binaries_root/scripts/build-mailpit.sh" "$go_binaries_root/bin/mailpit"
  fi
  if needs_go_binary toxiproxy-server "${TOXIPROXY_BIN:-}"; then
    go_build_in_background toxiproxy-server \
      build_go_binary toxiproxy-server github.com/Shopify/toxiproxy/v2/cmd/server @v2.12.0 server
  fi
  if needs_go_binary jaeger-all-in-one "${JAEGER_BIN:-}"; then
    # scripts/build-jaeger.sh: `go install` refuses its module; about 410 CPU-seconds from a cold cache (the CLI's
    # cache saves none of it: its dependencies are other versions).
    go_build_in_background jaeger-all-in-one bash "$go_binaries_root/scripts/build-jaeger.sh" "$go_binaries_root/bin/jaeger-all-in-one"
  fi
}

# Waits for what start_tool_builds (or start_cluster_builds) started; a failed build prints its output.
wait_go_builds() {
  local i failed=0
  for i in "${!go_build_pids[@]}"; do
    if ! wait "${go_build_pids[$i]}"; then
      cat "${go_build_logs[$i]}" >&2
      echo "building ${go_build_names[$i]} failed" >&2
      failed=1
    fi
    rm -f "${go_build_logs[$i]}"
  done
  go_build_pids=()
  go_build_names=()
  go_build_logs=()
  return "$failed"
}

# Until the CLI exists and no build of it runs (it is built first: its packages are the cluster's cache).
wait_for_cli_build() {
  local marker="$go_binaries_root/bin/.building-temporal" waited=0
  while :; do
    if [ -f "$marker" ] && kill -0 "$(cat "$marker" 2>/dev/null)" 2>/dev/null; then
      :
    elif [ -n "${TEMPORAL_CLI:-}" ] || [ -x "$go_binaries_root/bin/temporal" ] || command -v temporal >/dev/null; then
      return 0
    elif [ "$waited" -ge "${1:-0}" ]; then
      return 0 # nobody builds it: build ours without its cache
    fi
    sleep 1
    waited=$((waited + 1))
  done
}

# The cluster's three binaries, one after the other (each mostly from the cache), after the CLI's build.
# $1: how long to wait for a CLI build to start (.ci/run starts this before npm test starts that build).
build_cluster_binaries() {
  wait_for_cli_build "${1:-0}"
  local rc=0
  if needs_go_binary temporal-server "${TEMPORAL_SERVER_BIN:-}"; then
    timed "go build temporal-server" build_go_binary temporal-server go.temporal.io/server/cmd/server "$go_binaries_module" || rc=1
  fi
  if needs_go_binary temporal-sql-tool "${TEMPORAL_SQL_TOOL_BIN:-}"; then
    timed "go build temporal-sql-tool" build_go_binary temporal-sql-tool go.temporal.io/server/cmd/tools/sql "$go_binaries_module" || rc=1
  fi
  if needs_go_binary temporal-ui-server "${TEMPORAL_UI_SERVER_BIN:-}"; then
    timed "go build temporal-ui-server" \
      build_go_binary temporal-ui-server github.com/temporalio/ui-server/v2/cmd/server "$go_binaries_module" || rc=1
  fi
  return "$rc"
}
