#!/usr/bin/env bash
# The whole test suite, from a fresh clone: `npm test`. Set-up (setup.sh) starts the Go builds and apt in the
# background; the typecheck and Biome run while they build; then the sweep of dead runs' test databases and
# the suite (scripts/test-runner/run.ts: several files at once, longest first). Ends with where the time went.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/timing.sh"
top_level=
el_own_timings test-timings.log && top_level=1
el_machine
test_start=$(el_now)
SETUP_DEFER_WAIT=1 source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
step "typecheck"
timed typecheck npx tsc --noEmit -p .
step "format and lint (Biome)"
timed biome npx biome ci .
setup_wait
step "dropping the test databases of runs that are gone"
timed "sweep test databases" node --import tsx stack/test-databases.ts
step "tests (real Temporal dev server, real PostgreSQL, real HTTP)"
rc=0
timed tests node --import tsx --import ./scripts/test-runner/file-usage.mjs scripts/test-runner/run.ts || rc=$?
el_mark "el-phase npm_test start=$test_start end=$(el_now) cpu=-"
el_machine
[ -z "$top_level" ] || el_print_timings
exit "$rc"
