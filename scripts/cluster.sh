#!/usr/bin/env bash
# `npm run cluster`: set-up as for the demo, then the cluster with three workers until Ctrl-C or SIGTERM.
set -euo pipefail
SETUP_DEFER_WAIT=1 source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
source scripts/cluster-build.sh
start_cluster_build
setup_wait
wait_cluster_build
# node --import tsx, not npx tsx: npx does not pass SIGTERM on.
exec node --import tsx scripts/cluster.ts "$@"
