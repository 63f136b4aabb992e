#!/usr/bin/env bash
# `npm run cluster`: set-up as for the demo, then the cluster with three workers until Ctrl-C or SIGTERM.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/cluster-build.sh"
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
wait_cluster_build
# node --import tsx, not npx tsx: npx does not pass SIGTERM on.
exec node --import tsx scripts/cluster.ts "$@"
