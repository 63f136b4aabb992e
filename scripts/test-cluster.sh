#!/usr/bin/env bash
# The tests against a Temporal cluster persisted in PostgreSQL (`npm run test:cluster`, also run by .ci/run
# after `npm test`): end-to-end files that run unchanged on either target, plus test/cluster/ — a worker and
# the server process killed mid-run, TLS with a self-signed certificate, the small chaos configuration with
# three workers, the cluster script. Each file starts its own cluster (fresh temporal_<random> databases,
# dropped afterwards); files run side by side like npm test's (scripts/test-runner/run.ts), fewer at a time:
# a cluster is heavier than a dev server (EL_CLUSTER_TEST_CONCURRENCY, default 2). Arguments: other files.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/timing.sh"
top_level=
el_own_timings test-cluster-timings.log && top_level=1
el_machine
suite_start=$(el_now)
SETUP_DEFER_WAIT=1 source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
source scripts/cluster-build.sh
start_cluster_build
setup_wait
wait_cluster_build
step "cluster binaries: $(node --import tsx harness/cluster/binaries.ts | tr '\n' ' ')"
timed "sweep test databases" node --import tsx stack/test-databases.ts
step "tests against the cluster"
export EFFECT_LEDGER_TEMPORAL_TARGET=cluster
# Files that run unchanged on either target (operator-ui drives the standalone UI server here), then ours.
files=(test/approve.test.ts test/never-lost.test.ts test/concurrent-approval.test.ts test/unknown-keyed.test.ts
  test/operator-ui.test.ts test/worker-versioning.test.ts test/cluster/*.test.ts)

[ $# -eq 0 ] || files=("$@")
rc=0
timed "tests on the cluster" node --import tsx --import ./scripts/test-runner/file-usage.mjs scripts/test-runner/run.ts \
  --concurrency "${EL_CLUSTER_TEST_CONCURRENCY:-2}" --timeout 900000 "${files[@]}" || rc=$?
el_mark "el-phase test:cluster start=$suite_start end=$(el_now) cpu=-"
el_machine
[ -z "$top_level" ] || el_print_timings
exit "$rc"
