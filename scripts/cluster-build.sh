#!/usr/bin/env bash
# Sourced by cluster.sh and test-cluster.sh before setup.sh: starts `go install` of each missing cluster
# binary (Temporal server, schema tool, Web UI server) in the background, so the minutes a cold Go cache
# costs overlap npm, PostgreSQL and the CLI; `wait_cluster_build` waits for them. The versions are read from
# harness/cluster/binaries.ts (the one place they live), which also finds the binaries at run time.
cluster_build_pids=()
cluster_build_logs=()
start_cluster_build() {
  local root versions server_version ui_version
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  versions="$root/harness/cluster/binaries.ts"
  server_version=$(sed -n "s/^export const TEMPORAL_SERVER_VERSION = '\(v[0-9.]*\)';/\1/p" "$versions")
  ui_version=$(sed -n "s/^export const UI_SERVER_VERSION = '\(v[0-9.]*\)';/\1/p" "$versions")
  local go=go
  command -v go >/dev/null || go=/usr/local/go/bin/go
  [ -x "$(command -v "$go")" ] || return 0
  # name | env override | package | the name go install gives it
  local specs=(
    "temporal-server|${TEMPORAL_SERVER_BIN:-}|go.temporal.io/server/cmd/server@$server_version|server"
    "temporal-sql-tool|${TEMPORAL_SQL_TOOL_BIN:-}|go.temporal.io/server/cmd/tools/sql@$server_version|sql"
    "temporal-ui-server|${TEMPORAL_UI_SERVER_BIN:-}|github.com/temporalio/ui-server/v2/cmd/server@$ui_version|server"
  )
  mkdir -p "$root/bin"
  local spec name override pkg installed scratch log
  for spec in "${specs[@]}"; do
    IFS='|' read -r name override pkg installed <<<"$spec"
    [ -n "$override" ] || [ -x "$root/bin/$name" ] && continue
    scratch=$(mktemp -d "$root/bin/.build-$name-XXXX")
    log=$(mktemp)
    printf '\033[1m▸ building %s in the background (go install %s)\033[0m\n' "$name" "$pkg" >&2
    (
      rc=0
      (cd "$scratch" && GOBIN="$scratch" GOFLAGS="-buildvcs=false" "$go" install "$pkg") >"$log" 2>&1 &&
        mv "$scratch/$installed" "$root/bin/$name" || rc=1
      rm -rf "$scratch"
      exit "$rc"
    ) &
    cluster_build_pids+=("$!")
    cluster_build_logs+=("$log")
  done
}
wait_cluster_build() {
  local i
  for i in "${!cluster_build_pids[@]}"; do
    wait "${cluster_build_pids[$i]}" || { cat "${cluster_build_logs[$i]}" >&2; echo "a cluster binary failed to build" >&2; }
    rm -f "${cluster_build_logs[$i]}"
  done
}
start_cluster_build
