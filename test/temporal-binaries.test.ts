// The Temporal binaries are built at one set of versions (harness/temporal-binaries/go.mod): the CLI at the
// version temporal.yaml states, and the cluster's server and UI server at the versions that CLI is built with,
// so the cluster's build reuses the CLI's compiled packages (scripts/go-binaries.sh).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import {
  BINARIES,
  requiredVersion,
  TEMPORAL_BINARIES_MODULE,
  TEMPORAL_SERVER_VERSION,
} from '../harness/cluster/binaries.js';
import { loadTemporalConfig } from '../workers/config.js';

test('the module builds the CLI temporal.yaml names, and the cluster from the same server module', () => {
  assert.equal(requiredVersion('github.com/temporalio/cli'), loadTemporalConfig().cli.version);
  assert.equal(TEMPORAL_SERVER_VERSION, requiredVersion('go.temporal.io/server'));
  assert.ok(BINARIES.server.pkg.startsWith('go.temporal.io/server/'));
  assert.ok(BINARIES.uiServer.pkg.startsWith(`github.com/temporalio/ui-server/v2/`));
  requiredVersion('github.com/temporalio/ui-server/v2');
  const sums = readFileSync(`${TEMPORAL_BINARIES_MODULE}/go.sum`, 'utf8');
  for (const module of ['github.com/temporalio/cli', 'go.temporal.io/server', 'github.com/temporalio/ui-server/v2']) {
    assert.match(sums, new RegExp(`^${module.replaceAll('.', '\\.')} ${requiredVersion(module)} h1:`, 'm'), module);
  }
});
