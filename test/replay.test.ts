// Replays every recorded effect workflow history in test/histories against the code of the build that ran it: a
// change that would make a running effect take another path (non-determinism) fails here, naming the history,
// before it reaches a worker. Versions 1–6 ran unversioned behind patched() guards and are drained by the build
// of the frozen v6 code (workflows/v6); version 7 on, each build runs pinned, and its histories replay against the
// current code (v8 changed only what a new input field asks for: workflows/version.ts). Deliberately altered copies
// of each prove the guard bites.
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
import { CONTINUE_AS_NEW_PATCH, ONE_ACTIVITY_ATTEMPT_PATCH } from '../workflows/v6/patches.js';
import { EFFECT_WORKFLOW_VERSION, LAST_UNVERSIONED_VERSION, OLDEST_CURRENT_VERSION } from '../workflows/version.js';
import { READBACKS } from './altered-workflows/timer-before-readback.js';

// The altered workflows fail by design; the core's warning per failed workflow task would be noise.
Runtime.install({
  logger: new DefaultLogger('ERROR'),
  telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' }, forward: {} } },
});

const altered = (file: string) => fileURLToPath(new URL(`./altered-workflows/${file}`, import.meta.url));

interface Recorded {
  file: string;
  version: number;
  effectId: string;
  history: HistoryJson;
}

const files = readdirSync(HISTORIES_DIR)
  .filter((f) => f.endsWith('.json'))
  .sort();
const recorded: Recorded[] = files.map((file) => {
  const history = readHistoryFile(join(HISTORIES_DIR, file));
  return { file, version: parseHistoryFileName(file)?.version ?? 0, effectId: effectIdOf(history), history };
});
/** The histories the frozen v6 build replays, and those the current build does. */
const unversioned = recorded.filter((r) => r.version <= LAST_UNVERSIONED_VERSION);
const current = recorded.filter((r) => r.version >= OLDEST_CURRENT_VERSION);

type Bundle = Awaited<ReturnType<typeof bundleEffectWorkflows>>;

/** Replays histories with one replay worker; results come back one per history, in order. */
async function replay(workflowBundle: Bundle, set: Recorded[]): Promise<Map<string, ReplayResult>> {
  const results = new Map<string, ReplayResult>();
  const replaying = Worker.runReplayHistories(
    { workflowBundle },
    set.map(({ effectId, history }) => ({ workflowId: effectId, history })),
  );
  let i = 0;
  for await (const result of replaying) {
    const { file, effectId } = set[i++]!;
    assert.equal(result.workflowId, effectId);
    results.set(file, result);
  }
  assert.equal(results.size, set.length, 'every history was replayed');
  return results;
}

const describeError = (r: ReplayResult | undefined) =>
  r?.error ? `${r.error.name}: ${r.error.message}` : 'replayed cleanly';
const broken = (set: Recorded[], results: Map<string, ReplayResult>) =>
  set.filter(({ file }) => results.get(file)?.error).map(({ file }) => file);
const readsBack = (r: Recorded) => pathOf(r.history).some((step) => READBACKS.some((a) => step === `activity ${a}`));

/** How long each build's replay took, without the bundle build (for the log). */
const replayMs: Record<string, number> = {};

describe('replay of recorded histories', () => {
  test(`the set holds every path for the current workflow version (v${EFFECT_WORKFLOW_VERSION}), every file named v<version>.<name>.json`, () => {
    const misnamed = files.filter((f) => !parseHistoryFileName(f));
    assert.deepEqual(misnamed, [], 'history files must be named v<version>.<name>.json');
    const missing = pathsOfVersion(EFFECT_WORKFLOW_VERSION).filter(
      (path) =>
        !recorded.some((r) => r.version === EFFECT_WORKFLOW_VERSION && parseHistoryFileName(r.file)?.name === path),
    );
    assert.deepEqual(missing, [], `capture them with: npm run capture-histories`);
    const newer = recorded.filter((r) => r.version > EFFECT_WORKFLOW_VERSION).map((r) => r.file);
    assert.deepEqual(newer, [], 'histories from a workflow version newer than the code');
    const between = recorded
      .filter((r) => r.version > LAST_UNVERSIONED_VERSION && r.version < OLDEST_CURRENT_VERSION)
      .map((r) => r.file);
    assert.deepEqual(between, [], 'a pinned version older than the current one needs its frozen build here too');
  });

  for (const [build, set, bundle] of [
    ['the frozen v6 build (workflows/v6)', unversioned, () => bundleEffectWorkflows({ code: 'v6' })],
    [
      `the current build (v${EFFECT_WORKFLOW_VERSION}; v${OLDEST_CURRENT_VERSION} on)`,
      current,
      () => bundleEffectWorkflows(),
    ],
  ] as const) {
    describe(`against ${build}`, () => {
      let results: Map<string, ReplayResult>;
      before(async () => {
        const made = await bundle();
        const started = performance.now();
        results = await replay(made, set);
        replayMs[build] = performance.now() - started;
      });
      for (const { file } of set) {
        test(file, () => {
          const result = results.get(file);
          assert.ok(result && !result.error, `${file} no longer replays: ${describeError(result)}`);
        });
      }
    });
  }

  test('the two builds are not interchangeable: no v1–v6 history replays against the current code', async () => {
    const results = await replay(await bundleEffectWorkflows(), unversioned);
    assert.deepEqual(
      unversioned.filter(({ file }) => !results.get(file)?.error).map(({ file }) => file),
      [],
      'a pre-versioning effect must finish on the v6 build',
    );
  });

  describe('the guard bites: deliberately altered workflows fail to replay', () => {
    test('an extra timer before the first step breaks every history of either build, as a determinism violation', async () => {
      for (const [set, path] of [
        [unversioned, 'extra-first-step-v6.ts'],
        [current, 'extra-first-step.ts'],
      ] as const) {
        const results = await replay(await bundleEffectWorkflows({ workflowsPath: altered(path) }), set);
        assert.deepEqual(
          set.filter(({ file }) => !results.get(file)?.error).map(({ file }) => file),
          [],
        );
        for (const [file, result] of results)
          assert.equal(result.error?.name, 'DeterminismViolationError', `${file}: ${describeError(result)}`);
      }
    });

    test('a timer before each readback breaks exactly the histories that read back, in either build', async () => {
      for (const [set, code] of [
        [unversioned, 'v6'],
        [current, 'current'],
      ] as const) {
        const results = await replay(
          await bundleEffectWorkflows({ code, workflowInterceptorModules: [altered('timer-before-readback.ts')] }),
          set,
        );
        const expected = set.filter(readsBack).map(({ file }) => file);
        assert.ok(
          expected.length > 0 && expected.length < set.length,
          `${code}: histories with and without a readback`,
        );
        assert.deepEqual(broken(set, results), expected);
      }
    });

    /** The frozen v6 workflow bundled with one patch's guard removed (webpack swaps the SDK module, defines its ID). */
    const withoutGuard = (patchId: string) =>
      bundleEffectWorkflows({
        code: 'v6',
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

    test(`v6 build: without its patched() guard, the v2 change (continue-as-new in a long wait) breaks a v1 run that waited long`, async () => {
      const results = await replay(await withoutGuard(CONTINUE_AS_NEW_PATCH), unversioned);
      const result = results.get('v1.long-wait.json');
      assert.equal(result?.error?.name, 'DeterminismViolationError', describeError(result));
      // Histories whose runs never waited that long take no patched branch: they replay either way.
      assert.equal(results.get('v1.open-awaiting-human.json')?.error, undefined);
    });

    test('v6 build: without its patched() guard, the v3 change (one-activity attempts) breaks every v1 and v2 run', async () => {
      const results = await replay(await withoutGuard(ONE_ACTIVITY_ATTEMPT_PATCH), unversioned);
      const older = unversioned.filter((r) => r.version < 3).map(({ file }) => file);
      assert.ok(older.length > 0);
      assert.deepEqual(broken(unversioned, results), older);
    });
  });
});

// Each path's event count and the replay's wall time, for whoever reads the test log.
test('event counts per history', (t) => {
  for (const [build, ms] of Object.entries(replayMs)) t.diagnostic(`${build}: replayed in ${Math.round(ms)} ms`);
  for (const { file, history } of recorded) t.diagnostic(`${file}: ${eventTypes(history).length} events`);
});
