// Replays recorded effect workflow histories against today's workflow code: a change that would make
// a running effect take another path (non-determinism) fails here before it reaches a worker.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Worker } from '@temporalio/worker';
import { bundleEffectWorkflows } from '../workers/effect-worker.js';

const dir = fileURLToPath(new URL('./histories/', import.meta.url));
const files = readdirSync(dir).filter((f) => f.endsWith('.json'));

describe('replay of recorded histories', () => {
  test('there are recorded histories to replay', () => {
    assert.ok(files.length >= 3, `only ${files.length} histories in test/histories`);
  });
  const bundle = bundleEffectWorkflows();
  for (const file of files) {
    test(file, async () => {
      const history = JSON.parse(readFileSync(`${dir}${file}`, 'utf8')) as unknown;
      await Worker.runReplayHistory({ workflowBundle: await bundle }, history, file.replace(/\.json$/, ''));
    });
  }
});
