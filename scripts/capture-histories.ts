// Regenerates the replay set: every path in harness/histories/history-scenarios.ts, run on a fresh throwaway stack
// (dev server, database, simulator) and written as test/histories/v<EFFECT_WORKFLOW_VERSION>.<path>.json.
//   npm run capture-histories                        every path, into test/histories
//   npm run capture-histories -- --only conflict     some paths
//   npm run capture-histories -- --check             capture into a temp dir and compare the path each history
//                                                    records (steps taken, signals, how it closed) with the
//                                                    stored file's (exit 1 on a difference)
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { Command } from 'commander';
import {
  captureHistory,
  eventTypes,
  HISTORIES_DIR,
  historyFileName,
  pathOf,
  previousRunIdOf,
  readHistoryFile,
} from '../harness/histories/history-file.js';
import { HISTORY_PATHS, pathsOfVersion } from '../harness/histories/history-paths.js';
import {
  CAPTURED_WITH_LOCAL_ATTEMPTS,
  HISTORY_SCENARIOS,
  type HistoryScenario,
} from '../harness/histories/history-scenarios.js';
import { type Stack, startStack } from '../harness/local-stack.js';
import { effectStageKey } from '../workflows/search-attributes.js';
import { EFFECT_WORKFLOW_VERSION } from '../workflows/version.js';

// Short provider timeouts keep the run quick; readback on a schedule is off (an hour) so no timer can
// fire between the steps a scenario takes, and every capture takes the same path.
const CALL_TIMEOUT_MS = 1500;
const READBACK_INTERVAL_MS = 3_600_000;

const options = new Command('capture-histories')
  .option('--only <paths>', `comma-separated subset of: ${HISTORY_PATHS.join(', ')}`)
  .option('--out <dir>', 'where to write the files', HISTORIES_DIR)
  .option('--check', 'capture into a temporary directory and compare the path each history records with --out')
  .parse()
  .opts<{ only?: string; out: string; check?: boolean }>();

// A path a later version adds (history-paths.ts) is captured from that version on.
const wanted: readonly string[] =
  options.only?.split(',').map((p) => p.trim()) ?? pathsOfVersion(EFFECT_WORKFLOW_VERSION);
const unknownPaths = wanted.filter((p) => !(HISTORY_PATHS as readonly string[]).includes(p));
if (unknownPaths.length) {
  process.stderr.write(`unknown path(s): ${unknownPaths.join(', ')}; known: ${HISTORY_PATHS.join(', ')}\n`);
  process.exit(2);
}
const scenarios = HISTORY_SCENARIOS.filter((s) => wanted.includes(s.path));
const outDir = options.check ? mkdtempSync(join(tmpdir(), 'effect-histories-')) : options.out;
mkdirSync(outDir, { recursive: true });

/** Fails the capture when the effect is not where the scenario says it must be. */
async function assertWhereExpected(stack: Stack, scenario: HistoryScenario): Promise<void> {
  const handle = stack.env.client.workflow.getHandle(scenario.effectId);
  const { status, typedSearchAttributes } = await handle.describe();
  if (scenario.expect.open) {
    // No worker polls now (a query would wait for one): the search attribute says the stage.
    const stage = typedSearchAttributes.get(effectStageKey);
    if (status.name !== 'RUNNING' || stage !== scenario.expect.stage) {
      throw new Error(
        `${scenario.path}: expected a running workflow in ${scenario.expect.stage}, found ${status.name} in ${stage}`,
      );
    }
    return;
  }
  const result = await stack.effects.result(scenario.effectId);
  if (result.stage !== scenario.expect.stage)
    throw new Error(`${scenario.path}: expected stage ${scenario.expect.stage}, found ${result.stage}`);
}

const stack = await startStack({
  purpose: 'capture',
  callTimeoutMs: CALL_TIMEOUT_MS,
  readbackIntervalMs: READBACK_INTERVAL_MS,
  localAttempts: CAPTURED_WITH_LOCAL_ATTEMPTS,
});
const differences: string[] = [];
try {
  process.stdout.write(`Capturing the histories of effect workflow v${EFFECT_WORKFLOW_VERSION} into ${outDir}\n`);
  for (const scenario of scenarios) {
    const started = Date.now();
    // Each scenario on an empty provider: posts an earlier one crowded the feed with (within the listing's clock
    // tolerance of this one's attempt) would make its looks inconclusive.
    await stack.simulator.reset();
    await scenario.run(stack, scenario.effectId);
    await assertWhereExpected(stack, scenario);
    process.stdout.write(`  ${scenario.path} (${((Date.now() - started) / 1000).toFixed(1)} s): ${scenario.shows}\n`);
    const latest = join(outDir, historyFileName(EFFECT_WORKFLOW_VERSION, scenario.path));
    await captureHistory(stack.env.client, scenario.effectId, latest);
    const captured = [latest];
    if (scenario.previousRunPath) {
      const previousRunId = previousRunIdOf(readHistoryFile(latest));
      if (!previousRunId) throw new Error(`${scenario.path}: the captured run did not continue another run`);
      const previous = join(outDir, historyFileName(EFFECT_WORKFLOW_VERSION, scenario.previousRunPath));
      await captureHistory(stack.env.client, scenario.effectId, previous, previousRunId);
      captured.unshift(previous);
    }
    for (const out of captured) differences.push(...report(out));
  }
} finally {
  await stack.stop();
  if (options.check) rmSync(outDir, { recursive: true, force: true });
}
if (options.check) {
  process.stdout.write(
    differences.length
      ? `Differences:\n${differences.map((d) => `  ${d}`).join('\n')}\n`
      : 'Every history took the path the stored one records.\n',
  );
  process.exit(differences.length ? 1 : 0);
}

/** Prints what one captured file holds; with --check, says how its path differs from the stored one's. */
function report(out: string): string[] {
  const file = basename(out);
  const history = readHistoryFile(out);
  process.stdout.write(
    `    ${file}: ${eventTypes(history).length} events, ${(statSync(out).size / 1024).toFixed(1)} KiB\n`,
  );
  if (!options.check) return [];
  const stored = join(options.out, file);
  if (!existsSync(stored)) return [`${file}: no stored history to compare with`];
  const now = pathOf(history);
  const before = pathOf(readHistoryFile(stored));
  const at = now.findIndex((step, i) => step !== before[i]);
  if (at === -1 && now.length === before.length) return [];
  const i = at === -1 ? Math.min(now.length, before.length) : at;
  return [
    `${file}: step ${i + 1} is "${now[i] ?? '(none)'}" now, "${before[i] ?? '(none)'}" stored (${now.length} vs ${before.length} steps)`,
  ];
}
