#!/usr/bin/env bash
# The whole test suite, from a fresh clone: `npm test`.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
step "typecheck"
npx tsc --noEmit -p .
step "format and lint (Biome)"
npx biome ci .
step "tests (real Temporal dev server, real PostgreSQL, real HTTP)"
# One file at a time: each starts its own dev server and database, and the machine has two cores.
node --import tsx --test --test-concurrency=1 --test-timeout=600000 test/*.test.ts
