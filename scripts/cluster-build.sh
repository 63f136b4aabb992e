#!/usr/bin/env bash
# Sourced by cluster.sh and test-cluster.sh after setup.sh: start_cluster_build builds the missing cluster
# binaries (Temporal server, schema tool, Web UI server) in the background, once the CLI's build is done so
# they come mostly from its build cache (scripts/go-binaries.sh); wait_cluster_build waits for them.
source "$(dirname "${BASH_SOURCE[0]}")/go-binaries.sh"
cluster_build_pid=
cluster_build_log=
start_cluster_build() {
  cluster_build_log=$(mktemp)
  (build_cluster_binaries >"$cluster_build_log" 2>&1) &
  cluster_build_pid=$!
}
wait_cluster_build() {
  [ -n "$cluster_build_pid" ] || return 0
  wait "$cluster_build_pid" || { cat "$cluster_build_log" >&2; echo "a cluster binary failed to build" >&2; }
  rm -f "$cluster_build_log"
  cluster_build_pid=
}
