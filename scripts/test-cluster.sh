#!/usr/bin/env bash
# The tests against a Temporal cluster persisted in PostgreSQL (`npm run test:cluster`, also run by .ci/run
# after `npm test`): end-to-end files that run unchanged on either target, plus test/cluster/ — a worker and
# the server process killed mid-run, TLS with a self-signed certificate, the small chaos configuration with
# three workers. Each file starts its own cluster (fresh temporal_<random> databases, dropped afterwards).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/cluster-build.sh"
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
wait_cluster_build
step "cluster binaries: $(node --import tsx harness/cluster/binaries.ts | tr '\n' ' ')"
step "tests against the cluster"
export EFFECT_LEDGER_TEMPORAL_TARGET=cluster
# Files that run unchanged on either target (operator-ui drives the standalone UI server here), then ours.
if [ $# -eq 0 ]; then
  set -- test/approve.test.ts test/never-lost.test.ts test/concurrent-approval.test.ts test/unknown-keyed.test.ts \
    test/operator-ui.test.ts test/cluster/*.test.ts
fi
node --import tsx --test --test-concurrency=1 --test-timeout=900000 "$@"
