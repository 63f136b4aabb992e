#!/usr/bin/env bash
# The main job, from a fresh clone: `npm run demo`. Starts the dev server with its Web UI, the ledger,
# the provider simulator, Mailpit, a JetStream stream, an orders database and a worker; approves a
# handful of effects; prints what landed and each ledger trail; leaves the UIs up until Ctrl-C or SIGTERM.
# setup.sh waits for the Mailpit build it started (a fresh clone has none).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
# node --import tsx, not npx tsx: npx does not pass SIGTERM on to the demo.
exec node --import tsx scripts/demo.ts "$@"
