// The chaos run bites: the generator reaches what issue 19 found. Each aimed mix, with a fixed seed, reports the
// bug it is aimed at. Against today's code the bug is there; once its fix is merged, the test plants it back (a cut,
// test/support/cuts.ts) and the same seed must still report it. Every test is a lane of one chaos stack, and the
// lanes run at once (test/support/chaos-lanes.ts). The fixed seeds and the broken workers are in test/chaos.test.ts.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Mix } from '../scripts/chaos/generator.js';
import { violationsOf } from '../scripts/chaos/run.js';
import type { ChaosStack } from '../scripts/chaos/stack.js';
import { inLane, log, QUIET_RECONCILER, report, rootStack, runOn } from './support/chaos-lanes.js';
import { type Cut, cutEnvironment, cutProblem, PLANTED_CUTS } from './support/cuts.js';

const variantWorker = fileURLToPath(new URL('./support/variant-worker.ts', import.meta.url));

/** One of issue 19's bugs, and the aimed run that must report it. */
interface Planted {
  bug: string;
  mix: Mix;
  seed: number;
  effects: number;
  /** Violation kinds that count as catching it (at least one must be reported). */
  caught: string[];
  workers?: number;
  /**
   * The lane's readbacks per run before it continues as new (the root's 10 otherwise): a path that needs a
   * continued run gets one at its first readback, however the machine's load spaces them.
   */
  readbacksPerRun?: number;
  /** How long the settle phase may wait (default 60 s): a path that ends in a long in-flight window needs more. */
  settleMs?: number;
  skewSeconds?: number;
  skewedSlot?: number;
  /** The lane's in-flight window: its short absence grace (ChaosStack shortGraceMs). */
  shortGraceMs?: number;
  /**
   * Why the lane is skipped, with this reason printed: its seed no longer reaches the path (to be drawn again). The
   * bug keeps a direct test of its own.
   */
  todo?: string;
  /** The path needs the ledger reconciler's pass every 3 s (other lanes run it every 30 s: less load). */
  reconciler?: boolean;
  /** A bug planted on purpose: the cut that plants it (it must apply). */
  cuts?: Cut[];
  /**
   * The fix's return, from helper `decisions`'s branch (scripts/plant-bugs.ts there): planted once the fix is
   * in this tree (every cut applies); until then the test runs against today's code, which has the bug.
   */
  fixReturns?: Cut[];
}

/** The planted return of a fix. Every cut must apply: a fix that moved must move its return too, never run silently
 * against today's code (which has the fix, so nothing would be caught). */
function fixReturn(planted: Planted): Cut[] | undefined {
  const cuts = planted.fixReturns;
  for (const cut of cuts ?? []) assert.equal(cutProblem(cut), null, 'the planted return no longer applies');
  return cuts?.length ? cuts : undefined;
}

const PLANTED: Planted[] = [
  {
    bug: "a decision outlives its step: operator two's approve-retry, sent on the first step, is applied to the next",
    mix: { 'cross-step': 1 },
    // Draws a task.announce whose first step is held past its timeout; its operators decide at a barrier (both
    // decisions in one workflow task): the first confirms the object it waited for, the second approves a retry;
    // the announce post then fails before commit, so step announce goes UNKNOWN with the stale retry still queued.
    // (Seed 8073's announce got a 429 instead: its pause refused the leftover, and the lane reached 1 try in 6.)
    seed: 8617,
    effects: 2,
    // Applied to the next step, the stale retry either sends it again or, when its fresh readback finds the
    // post, throws on attempted → reconciled and leaves the run silently stuck (issue 19): either is caught.
    caught: ['decision_other_step', 'lost', 'stuck'],
    fixReturns: [
      {
        file: 'workflows/reconcile.ts',
        find: 'else if (!isTerminal(resolution.stage) && run.decisions.length)',
        replace: 'else if (false)',
      },
      {
        file: 'workflows/decisions.ts',
        find: 'const stale = run.staleness(queued);',
        replace: 'const stale = undefined;',
      },
    ],
  },
  {
    bug: 'the stale-decision refusal after a retry and the episode binding removed (planted): the leftover abandon ends the next episode',
    mix: { 'cross-step': 1 },
    // Draws a task.announce whose first step fails twice; its operators (a retry, an abandon) decide at a barrier.
    seed: 8226,
    effects: 2,
    todo: "v7's in-flight waits change this draw's path (the retry's post, held past its window, outlasts the 60 s settle: caught only as object_without_fact); seed 8711 (the same first effect, its later post failing before commit) missed 3 of 3 (the leftover abandon refused in the ledger, the announce step still in its in-flight window at the settle's end): to be drawn again; the fixes keep their direct tests (test/unknown-episodes.test.ts)",
    caught: ['decision_other_episode'],
    // The refusal after a retry and the episode binding (v5) each stop the leftover abandon, and since v7 so does the
    // look before an abandon (it records the object the retry made instead): with any one in place, removing the
    // others is harmless, so all three are planted.
    cuts: [
      ...PLANTED_CUTS['stale-refusal-removed'],
      {
        file: 'workflows/decisions.ts',
        find: 'const stale = run.staleness(queued);',
        replace: 'const stale = undefined;',
      },
      {
        file: 'workflows/decisions.ts',
        find: "const look = view.stage === 'unknown' ? await lookBeforeAbandon(run, decision.actor) : { clear: undefined };",
        replace: 'const look: any = { clear: undefined };',
      },
    ],
  },
  {
    bug: 'stepsToGo() returning every step (planted): a continued run carries the settled step again',
    mix: { 'cross-step': 1 },
    // Draws a task.announce on short runs whose post fails before commit: it waits for a person on its second
    // step, continues as new, and the next run carries the settled first step again.
    seed: 9081,
    effects: 2,
    caught: ['stage_mismatch'],
    // The planted bug shows only in a continued run. With 10 readbacks a run the continue-as-new came, or not,
    // before the run settled, by timing: on a loaded machine (a cold .ci/run, load average 17) 3 tries of 3
    // missed it, each with its announce step waiting for a person after one readback.
    readbacksPerRun: 1,
    // In a clean-clone .ci/run (2026-12-06) tries 2 and 3 ended their 60-s settle with the second effect's announce
    // still inside its in-flight window, 15–20 s short of the look that leads to the continued run; alone it is
    // caught at once in 7 s. The settle ends as soon as all is settled: the longer cap costs only a loaded run.
    settleMs: 150_000,
    cuts: PLANTED_CUTS['steps-to-go-all'],
  },
  {
    bug: 'revise() joins the refused run while it closes: the revision has no run (seed 913370001)',
    mix: { 'revision-race': 1 },
    // Draws two races at the barrier, one of them two rounds long (`npm run chaos -- --draw …`).
    seed: 10,
    effects: 2,
    caught: ['revision_without_run'],
    // Both of v5's fixes return: revise() joining the closing run, and that run's own hand-over to the current
    // revision (with the hand-over in place, the joined run continues as new on the revision: harmless).
    fixReturns: [
      {
        file: 'client/effect-ledger-client.ts',
        find: '    if (revised)\n      return starter.signalWithStart({',
        replace: '    if (false && revised)\n      return starter.signalWithStart({',
      },
      {
        file: 'workflows/effect-run.ts',
        find: 'if (current.revision <= this.releaseRevision) return ending;',
        replace: 'if (current.revision > 0) return ending;',
      },
    ],
  },
  {
    bug: 'an update re-sent with the same decision ID after a continue-as-new counts twice',
    mix: { resent: 1 },
    seed: 2001,
    effects: 2,
    caught: ['decision_applied_twice'],
    fixReturns: [
      {
        file: 'workflows/decisions.ts',
        find: 'if (!taken || taken.first) return false;',
        replace: 'return false;',
      },
    ],
  },
  {
    bug: 'the reconciler dies at a poison effect (its isolation cut): its passes fail, and the poison is left with no why',
    mix: { poison: 1 },
    seed: 3001,
    effects: 3,
    caught: ['reconciler_pass_failed', 'stuck'],
    reconciler: true,
    cuts: PLANTED_CUTS['reconciler-blind'],
  },
  {
    bug: 'the reconciler reads one page (its paging cut): an effect stranded behind a full page stays stranded',
    mix: { 'page-fill': 1 },
    seed: 3002,
    effects: 7,
    caught: ['stuck'],
    reconciler: true,
    cuts: PLANTED_CUTS['reconciler-one-page'],
  },
  {
    bug: "the in-flight window judged by the worker's clock: a worker ahead of PostgreSQL lets the retry leave",
    mix: { 'in-flight-retry': 1 },
    seed: 4001,
    effects: 3,
    // The lane's one worker is the skewed one: every readback judges the window on a clock 8 s ahead.
    skewedSlot: 0,
    // A window of 2 + 16 s and a clock 20 s ahead: the held post commits 11–17 s after it arrived, time enough
    // for the retry to leave under a loaded machine's pace (a 2 + 6 s window was missed under load).
    skewSeconds: 20,
    shortGraceMs: 16_000,
    caught: ['duplicate', 'duplicate_per_key'],
    fixReturns: [
      {
        file: 'activities/reconciliation-activities.ts',
        find: 'const began = clock.now;',
        replace: 'const began = new Date();',
      },
    ],
  },
  {
    bug: 'an abandon accepted while the provider still processes the request: the ledger gives up beside the object (seed 1201000004)',
    mix: { 'abandon-in-flight': 1 },
    seed: 7001,
    effects: 2,
    caught: ['object_without_fact'],
    fixReturns: [
      {
        file: 'workflows/decisions.ts',
        find: "const look = view.stage === 'unknown' ? await lookBeforeAbandon(run, decision.actor) : { clear: undefined };",
        replace: 'const look: any = { clear: undefined };',
      },
    ],
  },
  {
    bug: 'a run resumed after its predecessor was terminated in a "not sent" pause reads back and waits for a person (seed 4242)',
    mix: { 'terminated-in-pause': 1 },
    seed: 7101,
    effects: 2,
    // Since v7 the resumed run's first look proves absence and the policy's same-key retry records the effect: the
    // checker catches the look itself (a readback after only "not sent" answers), not an effect left in UNKNOWN.
    caught: ['unknown_without_send'],
    reconciler: true,
    fixReturns: [
      {
        file: 'workflows/attempt.ts',
        find: "if (report.lastAnswer === 'not_sent') {",
        replace: 'if (false) {',
      },
    ],
  },
  {
    bug: 'a capped listing that moved between its pages read as its end: a post pushed out meanwhile is called absent (cold .ci/run, unknown-keyless 7)',
    mix: { 'feed-churn': 1 },
    // Draws one feed-churn first: a post whose answer is held, read back while others post 100 a second.
    seed: 7201,
    effects: 2,
    caught: ['absent_beside_object'],
    fixReturns: [
      {
        file: 'activities/destinations/http-readback-listing.ts',
        find: 'if (seenAll && !reachedBack && read.listedAtMost !== undefined && pages > 1 && !matches.length) {',
        replace: 'if (false) {',
      },
    ],
  },
  {
    bug: 'a retry a person approves on the key-less feed leaves over an inconclusive look: a second post (seed 2026120402)',
    mix: { 'keyless-retry': 1 },
    seed: 7305,
    effects: 2,
    caught: ['duplicate'],
    fixReturns: [
      {
        // A retention of 0 (the feed honours no key) read as "no expiry to heed", as before the fix.
        file: 'workflows/effect-run.ts',
        find: 'if (seconds == null || !this.firstAttemptAt) return undefined;',
        replace: 'if (!seconds || !this.firstAttemptAt) return undefined;',
      },
    ],
  },
  {
    bug: 'an abandon on the key-less feed is taken over an inconclusive look, beside the post (seed 2026120603)',
    mix: { 'keyless-abandon': 1 },
    // Draws two posts held and crowded out of the listing before their first look: every look is inconclusive.
    seed: 7309,
    effects: 2,
    caught: ['object_without_fact'],
    fixReturns: [
      {
        file: 'workflows/decisions.ts',
        find: "if (look.clear && look.clear.outcome !== 'absent' && !decision.checkedAbsent)",
        replace: 'if (false)',
      },
    ],
  },
  {
    bug: 'a continue-as-new from a "not sent" pause starts the next run in UNKNOWN',
    mix: { 'not-sent-streak': 1 },
    // Draws two streaks, both on the keyed API since issue 26 (a key-less 429 is unknown, never "not sent").
    seed: 6004,
    effects: 2,
    caught: ['unknown_without_send'],
    fixReturns: [
      {
        file: 'workflows/effect-workflow.ts',
        find: 'let resumesSending = input.carried?.resendPending === true;',
        replace: 'let resumesSending = input.carried?.resendPending !== true && false;',
      },
    ],
  },
];

/** Tries per planted bug (see the loop): a race on a loaded machine gets a second chance to show. */
const PLANTED_TRIES = 3;

// Four lanes at a time. Each lane's path is a race: six at once (two rounds, not three) took longer, not shorter,
// in a cold .ci/run (507 s against 421 s at four) and missed more (seed 8617 3 of 3, seed 9081 twice). Each lane
// holds a few PostgreSQL connections (its runner, its workers); with test/chaos.test.ts's beside them the suite
// peaked at 59 of the server's 100 at four.
describe('chaos run: planted bugs', { concurrency: 4 }, () => {
  let root: ChaosStack;
  before(async () => {
    root = rootStack();
    await root.start();
  });
  after(() => root?.stop());

  for (const planted of PLANTED)
    test(`the chaos run catches: ${planted.bug} (seed ${planted.seed})`, {
      timeout: 600_000,
      ...(planted.todo ? { skip: planted.todo } : {}),
    }, async () => {
      for (const cut of planted.cuts ?? []) assert.equal(cutProblem(cut), null, 'the planted return no longer applies');
      const cuts = planted.cuts ?? fixReturn(planted);
      log(`${planted.bug}: ${cuts ? `planted by ${cuts.map((c) => c.file).join(', ')}` : "against today's code"}`);
      const stackOptions: Partial<ChaosStack['options']> = {
        workers: planted.workers ?? 1,
        ...(planted.readbacksPerRun !== undefined ? { readbacksPerRun: planted.readbacksPerRun } : {}),
        ...(planted.skewedSlot !== undefined ? { skewedSlot: planted.skewedSlot } : {}),
        ...(planted.shortGraceMs !== undefined ? { shortGraceMs: planted.shortGraceMs } : {}),
        workerEnv: {
          ...(planted.reconciler ? {} : QUIET_RECONCILER),
          ...(cuts ? cutEnvironment(cuts) : {}),
        },
        ...(cuts ? { workerEntry: variantWorker } : {}),
      };
      // The paths are races: on a loaded machine (CI runs four files at once) the same seed may miss its
      // window. Up to PLANTED_TRIES tries on a fresh lane, same seed, effect IDs of their own; a miss on all fails. Only a catch passes, so a retry
      // can never hide a violation — it can only give a slow machine its second chance to show the bug.
      const misses: string[] = [];
      for (let attempt = 1; attempt <= PLANTED_TRIES; attempt++) {
        const [outcome] = await inLane(root, stackOptions, (stack) =>
          runOn(stack, {
            seedList: [planted.seed],
            ...(attempt > 1 ? { runTag: `t${attempt}` } : {}),
            effects: planted.effects,
            mix: planted.mix,
            skewSeconds: planted.skewSeconds ?? 0,
            settleMs: planted.settleMs ?? 60_000,
          }),
        );
        const verdict = outcome?.verdict;
        if (!verdict) {
          misses.push(`try ${attempt}: no verdict: ${outcome?.error}`);
          continue;
        }
        if (violationsOf(verdict).some((f) => planted.caught.includes(f.kind))) return;
        misses.push(`try ${attempt}: not caught (${planted.caught.join(' or ')}):\n${report(verdict)}`);
        log(`${planted.bug}: try ${attempt} missed`);
      }
      assert.fail(misses.join('\n'));
    });
});
