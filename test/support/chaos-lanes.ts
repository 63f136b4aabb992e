// What the chaos test files share: one root chaos stack per file, lanes forked from it (ChaosStack.fork: their own
// database, provider simulator, task queue and workers; the Temporal server and the real destinations shared), and
// a chaos run on a lane with the files' defaults. Split in two files (test/chaos.test.ts, test/chaos-planted.test.ts)
// so that neither comes near the runner's per-file limit on a loaded machine: together they ran 600 s in one
// file on CI.
import { type ChaosOptions, type RunVerdict, runChaos, summarize } from '../../scripts/chaos/run.js';
import { ChaosStack } from '../../scripts/chaos/stack.js';

export const log = (line: string) => process.stdout.write(`# ${line}\n`);

/** The worker environment of a lane whose path does not need the reconciler often. */
export const QUIET_RECONCILER = { EFFECT_LEDGER_RECONCILE_EVERY_MS: '30000' };

export const report = (verdict: RunVerdict): string => summarize(verdict).join('\n');

/** A file's root stack: it owns the dev server its lanes share. */
export const rootStack = () =>
  new ChaosStack({
    workers: 2,
    callTimeoutMs: 2000,
    readbackIntervalMs: 3000,
    readbacksPerRun: 10,
    maxIdLength: 100,
    suggestContinueAsNewAt: 100,
    reconcilerPageSize: 5,
    log,
  });

/** A lane of the root stack for one test, stopped when it ends. */
export async function inLane<T>(
  root: ChaosStack,
  options: Partial<ChaosStack['options']>,
  body: (stack: ChaosStack) => Promise<T>,
): Promise<T> {
  const lane = root.fork({ ledgerConnections: 2, ...options });
  await lane.start();
  try {
    return await body(lane);
  } finally {
    await lane.stop();
  }
}

/** A chaos run on a stack, with no process faults unless asked. */
export const runOn = (stack: ChaosStack, options: Partial<ChaosOptions> & { seedList: number[]; effects: number }) =>
  runChaos({
    kills: 0,
    devRestarts: 0,
    dies: 0,
    terminations: 0,
    seeds: options.seedList.length,
    workers: stack.options.workers,
    callTimeoutMs: 2000,
    settleMs: 90_000,
    reconcileMs: 15_000,
    shrinkMs: 0,
    log: (line) => log(`[${options.seedList.join(',')}] ${line}`),
    stack,
    ...options,
  });
