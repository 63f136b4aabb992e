#!/usr/bin/env bash
# The main job, from a fresh clone: `npm run demo`. Starts the dev server with its Web UI, the ledger,
# the provider simulator and a worker; approves a handful of effects; prints each ledger trail; leaves
# the UI up until Ctrl-C.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
# node --import tsx, not npx tsx: npx does not pass SIGTERM on to the demo.
exec node --import tsx scripts/demo.ts "$@"
