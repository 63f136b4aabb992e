// Replays every recorded effect workflow history in test/histories against today's workflow code: a
// change that would make a running effect take another path (non-determinism) fails here, naming the
// history, before it reaches a worker. Deliberately altered copies of the workflow prove the guard bites.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { DefaultLogger, type ReplayResult, Runtime, Worker } from '@temporalio/worker';
import webpack from 'webpack';
import {
  effectIdOf,
  eventTypes,
  HISTORIES_DIR,
  type HistoryJson,
  parseHistoryFileName,
  pathOf,
  readHistoryFile,
} from '../harness/histories/history-file.js';
import { pathsOfVersion } from '../harness/histories/history-paths.js';
import { bundleEffectWorkflows } from '../workers/effect-worker.js';
import { CONTINUE_AS_NEW_PATCH, ONE_ACTIVITY_ATTEMPT_PATCH } from '../workflows/patches.js';
import { EFFECT_WORKFLOW_VERSION } from '../workflows/version.js';

// The altered workflows fail by design; the core's warning per failed workflow task would be noise.
Runtime.install({
  logger: new DefaultLogger('ERROR'),
  telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' }, forward: {} } },
});

const altered = (file: string) => fileURLToPath(new URL(`./altered-workflows/${file}`, import.meta.url));

interface Recorded {
  file: string;
  effectId: string;
  history: HistoryJson;
}

const files = readdirSync(HISTORIES_DIR)
  .filter((f) => f.endsWith('.json'))
  .sort();
const recorded: Recorded[] = files.map((file) => {
  const history = readHistoryFile(join(HISTORIES_DIR, file));
  return { file, effectId: effectIdOf(history), history };
});

/** Replays every history with one replay worker; results come back one per history, in order. */
async function replayAll(
  workflowBundle: Awaited<ReturnType<typeof bundleEffectWorkflows>>,
): Promise<Map<string, ReplayResult>> {
  const results = new Map<string, ReplayResult>();
  const replay = Worker.runReplayHistories(
    { workflowBundle },
    recorded.map(({ effectId, history }) => ({ workflowId: effectId, history })),
  );
  let i = 0;
  for await (const result of replay) {
    const { file, effectId } = recorded[i++]!;
    assert.equal(result.workflowId, effectId);
    results.set(file, result);
  }
  assert.equal(results.size, recorded.length, 'every history was replayed');
  return results;
}

/** How long replaying the set against the current code took, without the bundle build (for the log). */
let replayMs: number | undefined;

const describeError = (r: ReplayResult | undefined) =>
  r?.error ? `${r.error.name}: ${r.error.message}` : 'replayed cleanly';

describe('replay of recorded histories', () => {
  test(`the set holds every path for the current workflow version (v${EFFECT_WORKFLOW_VERSION}), every file named v<version>.<name>.json`, () => {
    const misnamed = files.filter((f) => !parseHistoryFileName(f));
    assert.deepEqual(misnamed, [], 'history files must be named v<version>.<name>.json');
    const current = files
      .map(parseHistoryFileName)
      .filter((p) => p?.version === EFFECT_WORKFLOW_VERSION)
      .map((p) => p!.name);
    const missing = pathsOfVersion(EFFECT_WORKFLOW_VERSION).filter((path) => !current.includes(path));
    assert.deepEqual(missing, [], `capture them with: npm run capture-histories`);
    const newer = files.filter((f) => parseHistoryFileName(f)!.version > EFFECT_WORKFLOW_VERSION);
    assert.deepEqual(newer, [], 'histories from a workflow version newer than the code');
  });

  describe('against the current workflow code', () => {
    let results: Map<string, ReplayResult>;
    before(async () => {
      const bundle = await bundleEffectWorkflows();
      const started = performance.now();
      results = await replayAll(bundle);
      replayMs = performance.now() - started;
    });
    for (const { file } of recorded) {
      test(file, () => {
        const result = results.get(file);
        assert.ok(result && !result.error, `${file} no longer replays: ${describeError(result)}`);
      });
    }
  });

  describe('the guard bites: deliberately altered workflows fail to replay', () => {
    test('an extra timer before the first step breaks every history, as a determinism violation', async () => {
      const results = await replayAll(await bundleEffectWorkflows({ workflowsPath: altered('extra-first-step.ts') }));
      const replayedCleanly = recorded.filter(({ file }) => !results.get(file)?.error).map(({ file }) => file);
      assert.deepEqual(replayedCleanly, []);
      for (const [file, result] of results)
        assert.equal(result.error?.name, 'DeterminismViolationError', `${file}: ${describeError(result)}`);
    });

    test('a timer before each readback breaks exactly the histories that read back', async () => {
      const results = await replayAll(
        await bundleEffectWorkflows({ workflowInterceptorModules: [altered('timer-before-readback.ts')] }),
      );
      const expected = recorded
        .filter(({ history }) => pathOf(history).includes('activity readBack'))
        .map(({ file }) => file);
      const broken = recorded.filter(({ file }) => results.get(file)?.error).map(({ file }) => file);
      assert.ok(
        expected.length > 0 && expected.length < recorded.length,
        'the set holds histories with and without a readback',
      );
      assert.deepEqual(broken, expected);
    });

    /** The workflow bundled with one patch's guard removed (webpack swaps the SDK module, defines its ID). */
    const withoutGuard = (patchId: string) =>
      bundleEffectWorkflows({
        webpackConfigHook: (config) => ({
          ...config,
          resolve: {
            ...config.resolve,
            alias: {
              ...(config.resolve?.alias as Record<string, string>),
              '@temporalio/workflow$': altered('unguarded-patch.ts'),
            },
          },
          plugins: [...(config.plugins ?? []), new webpack.DefinePlugin({ UNGUARDED: JSON.stringify(patchId) })],
        }),
      });

    test(`without its patched() guard, the v2 change (continue-as-new in a long wait) breaks a v1 run that waited long`, async () => {
      const results = await replayAll(await withoutGuard(CONTINUE_AS_NEW_PATCH));
      const result = results.get('v1.long-wait.json');
      assert.equal(result?.error?.name, 'DeterminismViolationError', describeError(result));
      // Histories whose runs never waited that long take no patched branch: they replay either way.
      assert.equal(results.get('v1.open-awaiting-human.json')?.error, undefined);
    });

    test('without its patched() guard, the v3 change (one-activity attempts) breaks every v1 and v2 run', async () => {
      const results = await replayAll(await withoutGuard(ONE_ACTIVITY_ATTEMPT_PATCH));
      const broken = recorded.filter(({ file }) => results.get(file)?.error).map(({ file }) => file);
      const older = recorded
        .filter(({ file }) => (parseHistoryFileName(file)?.version ?? 0) < 3)
        .map(({ file }) => file);
      assert.ok(older.length > 0);
      assert.deepEqual(broken, older);
    });
  });
});

// Each path's event count and the replay's wall time, for whoever reads the test log.
test('event counts per history', (t) => {
  if (replayMs !== undefined) t.diagnostic(`replayed ${recorded.length} histories in ${Math.round(replayMs)} ms`);
  for (const { file, history } of recorded) t.diagnostic(`${file}: ${eventTypes(history).length} events`);
});
