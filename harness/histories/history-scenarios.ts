// One scenario per path the effect workflow can take, with fixed effect IDs, payloads and faults, so
// `npm run capture-histories` re-run on unchanged code takes the same paths. Each drives a real stack
// (harness/local-stack.ts) to the point its history should show and says where the effect must be.

import { EffectLedgerClient } from '../../client/effect-ledger-client.js';
import type { EffectStage } from '../../domain/stages.js';
import { waitFor } from '../../stack/wait-for.js';
import {
  abandonSignal,
  approveRetrySignal,
  confirmDeliverySignal,
  decideUpdate,
  lookNowSignal,
} from '../../workflows/contract.js';
import { runEffect, socialPostsFor, waitForStage, wakeWithStaleDecisions } from '../effect-probes.js';
import type { Stack } from '../local-stack.js';
import { postRequest, refundRequest, taskAnnouncedRequest } from '../sample-requests.js';
import { startWorkerProcess } from '../worker-process.js';
import { HISTORY_PATHS, type HistoryPath } from './history-paths.js';

export interface HistoryScenario {
  /** The path, as the history file names it: v<version>.<path>.json. */
  path: HistoryPath;
  /** What the history shows, for the capture's log. */
  shows: string;
  effectId: string;
  /** Drives the effect; resolves when its history is ready to capture. */
  run(stack: Stack, effectId: string): Promise<unknown>;
  /** Also capture the run the captured one continued from (continue-as-new), under this path. */
  previousRunPath?: HistoryPath;
  /** Where the effect must be when captured; `open` = still running, awaiting a human. */
  expect: { stage: EffectStage; open?: boolean };
}

const OPS = 'ops@example.com';

/** The current version's set is captured with local attempts (v8); the v7 set holds the regular-activity path. */
export const CAPTURED_WITH_LOCAL_ATTEMPTS = true;

const handle = (stack: Stack, effectId: string) => stack.env.client.workflow.getHandle(effectId);

/** A key-less post whose request never reached the provider: readback proves absence, a human is awaited. */
async function awaitingHuman(stack: Stack, effectId: string, text: string): Promise<void> {
  await stack.simulator.fault('fail_before_commit', { path: '/social/v1/posts' });
  await stack.effects.approve(postRequest(effectId, text));
  await waitForStage(stack, effectId, 'unknown', 'a human decision');
}

/**
 * A key-less post committed with its answer held past our timeout, then pushed out of the listing by 100 later
 * posts: every look is inconclusive and a human is awaited. Returns the post (while a worker polls).
 */
async function heldPostOutOfListing(stack: Stack, effectId: string, text: string, effects = stack.effects) {
  await stack.simulator.fault('delay_after_commit', { path: '/social/v1/posts', delayMs: 30_000 });
  await effects.approve(postRequest(effectId, text));
  const [ours] = await waitFor(async () => {
    const found = await socialPostsFor(stack, effectId);
    return found.length ? found : undefined;
  }, 'our post to exist at the provider');
  await stack.simulator.crowdSocialFeed(100);
  await waitForStage(stack, effectId, 'unknown', 'a human decision');
  return ours!;
}

/**
 * A held post out of the listing; a person's decision that the look cannot allow is refused (the ledger then holds
 * `rowsOnceRefused` decisions); then the person confirms the post, further down the feed.
 */
async function refusedOverHiddenPost(
  stack: Stack,
  effectId: string,
  text: string,
  decision: typeof approveRetrySignal,
  reason: string,
  rowsOnceRefused: number,
) {
  await stack.withWorker(async () => {
    const ours = await heldPostOutOfListing(stack, effectId, text);
    const h = handle(stack, effectId);
    await h.signal(decision, { actor: OPS, reason });
    await waitFor(
      async () => (await stack.effects.status(effectId)).trail.decisions.length === rowsOnceRefused,
      `the ${decision.name} to be refused after its look`,
    );
    await h.signal(confirmDeliverySignal, { actor: OPS, reason: 'found it further down', externalId: ours.id });
    await stack.effects.result(effectId);
  });
}

export const HISTORY_SCENARIOS: readonly HistoryScenario[] = [
  {
    path: 'happy-path',
    shows: 'released, one attempt, confirmed by the provider, recorded',
    effectId: 'hist:happy-path',
    expect: { stage: 'recorded' },
    run: (stack, effectId) => runEffect(stack, refundRequest(effectId, 100, 'ch_h1')),
  },
  {
    path: 'rejected',
    shows: 'the provider refuses the refund (HTTP 400): rejected, no retry',
    effectId: 'hist:rejected',
    expect: { stage: 'rejected' },
    run: (stack, effectId) => runEffect(stack, refundRequest(effectId, -5, 'ch_h2')),
  },
  {
    path: 'not-sent-retry',
    shows: '503 with Retry-After (not processed): a timer, then the same key again, recorded',
    effectId: 'hist:not-sent-retry',
    expect: { stage: 'recorded' },
    async run(stack, effectId) {
      await stack.simulator.fault('status_503_before_commit', { path: '/v1/objects' });
      await runEffect(stack, refundRequest(effectId, 110, 'ch_h3'));
    },
  },
  {
    path: 'conflict',
    shows:
      'attempt 1 held by the provider past our timeout (unknown; readback: our key is in flight); a human approves a retry, ' +
      'the provider answers 409 "key in use" (unknown again); once the first request commits, a second approve-retry gets the stored answer',
    effectId: 'hist:conflict',
    expect: { stage: 'recorded' },
    async run(stack, effectId) {
      await stack.simulator.fault('delay_before_commit', { path: '/v1/objects', delayMs: 8000 });
      await stack.withWorker(async () => {
        await stack.effects.approve(refundRequest(effectId, 120, 'ch_h4'));
        await waitForStage(stack, effectId, 'unknown', 'a human decision');
        await handle(stack, effectId).signal(approveRetrySignal, {
          actor: OPS,
          reason: 'provider dashboard shows nothing yet',
        });
        await waitFor(async () => {
          const s = await stack.effects.status(effectId);
          return (
            s.live?.attempts.length === 2 && s.live.stage === 'unknown' && s.live.awaiting?.includes('a human decision')
          );
        }, 'the 409 to leave the effect unknown again');
        await waitFor(
          async () => (await stack.simulator.objects()).some((o) => o.metadata.effect_id === effectId),
          'the held request to commit',
        );
        await handle(stack, effectId).signal(approveRetrySignal, {
          actor: OPS,
          reason: 'the first request has finished; same key again',
        });
        await stack.effects.result(effectId);
      });
    },
  },
  {
    path: 'unknown-readback-found',
    shows: 'committed, then the connection dropped: unknown, readback finds the object by key, reconciled, recorded',
    effectId: 'hist:unknown-readback-found',
    expect: { stage: 'recorded' },
    async run(stack, effectId) {
      await stack.simulator.fault('drop_after_commit', { path: '/v1/objects' });
      await runEffect(stack, refundRequest(effectId, 130, 'ch_h5'));
    },
  },
  {
    path: 'unknown-readback-absent-retry',
    shows:
      'failed before commit: unknown, readback proves absence over complete coverage, automatic same-key retry, recorded',
    effectId: 'hist:unknown-readback-absent-retry',
    expect: { stage: 'recorded' },
    async run(stack, effectId) {
      await stack.simulator.fault('fail_before_commit', { path: '/v1/objects' });
      await runEffect(stack, refundRequest(effectId, 140, 'ch_h6'));
    },
  },
  {
    path: 'unknown-worker-killed',
    shows:
      'the worker is SIGKILLed mid-call: the send activity times out (unknown), readback finds the object, recorded',
    effectId: 'hist:unknown-worker-killed',
    expect: { stage: 'recorded' },
    async run(stack, effectId) {
      const posts = async () => (await stack.simulator.stats()).posts['/v1/objects'] ?? 0;
      const before = await posts();
      await stack.simulator.fault('delay_after_commit', { path: '/v1/objects', delayMs: 60_000 });
      const doomed = await startWorkerProcess(stack);
      await stack.effects.approve(refundRequest(effectId, 150, 'ch_h7'));
      await waitFor(async () => (await posts()) > before, 'the POST to reach the provider');
      await doomed.kill();
      await stack.withWorker(() => stack.effects.result(effectId));
    },
  },
  {
    path: 'unknown-human-approve-retry',
    shows:
      'key-less post lost before commit: readback absent, no automatic retry; a human signals approve-retry; same key; recorded',
    effectId: 'hist:unknown-human-approve-retry',
    expect: { stage: 'recorded' },
    async run(stack, effectId) {
      await stack.withWorker(async () => {
        await awaitingHuman(stack, effectId, 'History: approve-retry');
        await handle(stack, effectId).signal(approveRetrySignal, {
          actor: OPS,
          reason: 'nothing on the channel; send it',
        });
        await stack.effects.result(effectId);
      });
    },
  },
  {
    path: 'unknown-abandon',
    shows: 'key-less post lost before commit: a human abandons it through the decide update',
    effectId: 'hist:unknown-abandon',
    expect: { stage: 'abandoned' },
    async run(stack, effectId) {
      await stack.withWorker(async () => {
        await awaitingHuman(stack, effectId, 'History: abandon');
        await handle(stack, effectId).executeUpdate(decideUpdate, {
          args: [{ decision: 'abandon', actor: OPS, reason: 'campaign cancelled' }],
        });
        await stack.effects.result(effectId);
      });
    },
  },
  {
    path: 'unknown-abandon-object-landed',
    shows:
      'refund held by the provider past our timeout (key in flight): a human abandons it; the abandon waits, the refund lands, readback records it and the abandon is refused',
    effectId: 'hist:unknown-abandon-object-landed',
    expect: { stage: 'recorded' },
    async run(stack, effectId) {
      await stack.simulator.fault('delay_before_commit', { path: '/v1/objects', delayMs: 600_000 });
      const quick = stack.effectsWith({ callTimeoutMs: 2000 });
      await stack.withWorker(async () => {
        await quick.approve(refundRequest(effectId, 120, 'ch_h9'));
        await waitForStage(stack, effectId, 'unknown', 'a human decision');
        const abandon = handle(stack, effectId).executeUpdate(decideUpdate, {
          args: [{ decision: 'abandon', actor: OPS, reason: 'looks stuck' }],
        });
        await waitForStage(stack, effectId, 'unknown', `abandon by ${OPS}`);
        await stack.simulator.releaseDelays();
        await abandon;
        await stack.effects.result(effectId);
      });
    },
  },
  {
    path: 'not-sent-resumed',
    shows:
      'keyed refund answered 429 (not sent: the key dedupes a resend) again and again; its run is terminated while it pauses; the re-approval starts the next run, which finds the last attempt "not sent" and sends the next with the same key: recorded, no readback (a key-less 429 is unknown since issue 26)',
    effectId: 'hist:not-sent-resumed',
    expect: { stage: 'recorded' },
    async run(stack, effectId) {
      await stack.simulator.fault('status_429_before_commit', { path: '/v1/objects', count: 100 });
      const request = refundRequest(effectId, 130, 'ch_h10');
      await stack.withWorker(async () => {
        await stack.effects.approve(request);
        await waitForStage(stack, effectId, 'attempted', 'not sent');
        await stack.simulator.clearFaults();
        await handle(stack, effectId).terminate('history: terminated while it paused to resend');
        await stack.effects.approve(request);
        await stack.effects.result(effectId);
      });
    },
  },
  {
    path: 'malformed-decision-ignored',
    shows:
      'garbage signals (wrong types, blank actor, a bare string, confirm without evidence, extra fields, a misspelt name) are refused and recorded; then a valid approve-retry',
    effectId: 'hist:malformed-decision-ignored',
    expect: { stage: 'recorded' },
    async run(stack, effectId) {
      await stack.withWorker(async () => {
        await awaitingHuman(stack, effectId, 'History: malformed decisions');
        const h = handle(stack, effectId);
        await h.signal(approveRetrySignal, { actor: 5, reason: 'x' });
        await h.signal(approveRetrySignal, { actor: '   ', reason: 'x' });
        await h.signal(approveRetrySignal, 'retry please');
        await h.signal(confirmDeliverySignal, { actor: OPS, reason: 'trust me' });
        await h.signal(abandonSignal, { actor: OPS, reason: 'x', force: true });
        await h.signal('approve', { actor: OPS, reason: 'typo in the signal name' });
        await waitFor(
          async () => (await stack.effects.status(effectId)).trail.decisions.length === 6,
          'six refused decisions in the ledger',
        );
        await h.signal(approveRetrySignal, { actor: OPS, reason: 'checked the channel by hand' });
        await stack.effects.result(effectId);
      });
    },
  },
  {
    path: 'open-awaiting-human',
    shows:
      'still running: key-less post lost before commit, readback absent, waiting for a human (the case that matters in production)',
    effectId: 'hist:open-awaiting-human',
    expect: { stage: 'unknown', open: true },
    run: (stack, effectId) => stack.withWorker(() => awaitingHuman(stack, effectId, 'History: still open')),
  },
  {
    path: 'long-wait-next-run',
    previousRunPath: 'long-wait-continued-as-new',
    shows:
      'a key-less post awaiting a human: after the run woke twice (two stale decisions refused here; 50 wakes by default) it ' +
      'continues as new (the previous run is captured too); the next run carries the attempts, a human approves a retry, ' +
      'attempt 2, recorded',
    effectId: 'hist:long-wait',
    expect: { stage: 'recorded' },
    async run(stack, effectId) {
      const patient = new EffectLedgerClient({
        client: stack.env.client,
        db: stack.ledger.db,
        taskQueue: stack.taskQueue,
        localAttempts: CAPTURED_WITH_LOCAL_ATTEMPTS,
        callTimeoutMs: 1500,
        readbackIntervalMs: 2000,
        readbacksPerRun: 2,
        absenceGraceMs: 0,
      });
      await stack.simulator.fault('fail_before_commit', { path: '/social/v1/posts' });
      await stack.withWorker(async () => {
        await patient.approve(postRequest(effectId, 'History: a long wait'));
        const { runId: firstRunId } = await handle(stack, effectId).describe();
        await waitForStage(stack, effectId, 'unknown', 'a human decision');
        await wakeWithStaleDecisions(stack, effectId, 2);
        await waitFor(
          async () =>
            (await stack.env.client.workflow.getHandle(effectId, firstRunId).describe()).status.name ===
            'CONTINUED_AS_NEW',
          'the first run to continue as new',
        );
        // The next run reads back once, then awaits a human; the decision lands well before its next readback.
        const next = await waitForStage(stack, effectId, 'unknown', 'a human decision');
        if (next.attempts.length !== 1)
          throw new Error(`the next run shows ${next.attempts.length} attempts, not the 1 carried`);
        await handle(stack, effectId).signal(approveRetrySignal, { actor: OPS, reason: 'waited long enough; send it' });
        await stack.effects.result(effectId);
      });
    },
  },
  {
    path: 'unknown-human-confirm',
    shows:
      'key-less post committed but its answer held; 100 later posts push it out of the listing (readback inconclusive); ' +
      'confirm-delivery with a wrong object ID is refused, with the right one it is recorded by a human',
    effectId: 'hist:unknown-human-confirm',
    expect: { stage: 'recorded' },
    async run(stack, effectId) {
      await stack.withWorker(async () => {
        const ours = await heldPostOutOfListing(stack, effectId, 'History: confirm');
        const h = handle(stack, effectId);
        await h.signal(confirmDeliverySignal, { actor: OPS, reason: 'I saw it', externalId: 'post_doesnotexist' });
        await waitFor(
          async () => (await stack.effects.status(effectId)).trail.decisions.length === 1,
          'the wrong evidence to be refused',
        );
        await h.signal(confirmDeliverySignal, {
          actor: OPS,
          reason: 'found it on the channel page',
          externalId: ours.id,
        });
        await stack.effects.result(effectId);
      });
    },
  },
  {
    path: 'multi-step-unknown-readback',
    shows:
      'v4: two steps (a task at the keyed API, then a post announcing it); the task is confirmed, the post commits but its ' +
      'answer is lost: unknown, readback of the post step only finds it, reconciled, recorded',
    effectId: 'hist:multi-step',
    expect: { stage: 'recorded' },
    async run(stack, effectId) {
      await stack.simulator.fault('drop_after_commit', { path: '/social/v1/posts' });
      await runEffect(stack, taskAnnouncedRequest(effectId, 'request-h8', 'History: two steps'));
    },
  },
  {
    path: 'not-hosted-wait',
    shows:
      'v5: the only polling worker hosts no destination: its attempt is answered "not hosted" (nothing written) and the ' +
      'run waits, then a worker that hosts keyed-api makes attempt 1 and the refund is recorded',
    effectId: 'hist:not-hosted-wait',
    expect: { stage: 'recorded' },
    async run(stack, effectId) {
      await stack.withWorker(
        async () => {
          await stack.effects.approve(refundRequest(effectId, 130, 'ch_h9'));
          await waitForStage(stack, effectId, 'attempted', 'a worker that hosts destination keyed-api');
        },
        { adapters: () => ({}) },
      );
      await stack.withWorker(() => stack.effects.result(effectId));
    },
  },
  {
    path: 'multi-step-next-run',
    previousRunPath: 'multi-step-continued-as-new',
    shows:
      'v5: two steps; the task is confirmed, the post is lost before the feed stores it: step announce awaits a human; ' +
      'after the run woke twice (two stale decisions) it continues as new (the previous run is captured too); the next run ' +
      'carries step announce only (main stays done, never read back), a human approves a retry of it, recorded',
    effectId: 'hist:multi-step-long-wait',
    expect: { stage: 'recorded' },
    async run(stack, effectId) {
      const patient = new EffectLedgerClient({
        client: stack.env.client,
        db: stack.ledger.db,
        taskQueue: stack.taskQueue,
        localAttempts: CAPTURED_WITH_LOCAL_ATTEMPTS,
        callTimeoutMs: 1500,
        readbackIntervalMs: 2000,
        readbacksPerRun: 2,
        absenceGraceMs: 0,
      });
      await stack.simulator.fault('fail_before_commit', { path: '/social/v1/posts' });
      await stack.withWorker(async () => {
        await patient.approve(taskAnnouncedRequest(effectId, 'request-h9', 'History: two steps, a long wait'));
        const { runId: firstRunId } = await handle(stack, effectId).describe();
        await waitForStage(stack, effectId, 'unknown', 'a human decision');
        await wakeWithStaleDecisions(stack, effectId, 2, 'announce');
        await waitFor(
          async () =>
            (await stack.env.client.workflow.getHandle(effectId, firstRunId).describe()).status.name ===
            'CONTINUED_AS_NEW',
          'the first run to continue as new',
        );
        const next = await waitForStage(stack, effectId, 'unknown', 'a human decision');
        if (next.step !== 'announce') throw new Error(`the next run carries step ${next.step}, not announce`);
        await handle(stack, effectId).signal(approveRetrySignal, {
          actor: OPS,
          reason: 'no post on the channel; send it',
          step: 'announce',
        });
        await stack.effects.result(effectId);
      });
    },
  },
  {
    path: 'unknown-looks-then-confirm',
    shows:
      'v7: a key-less post committed but its answer held, then pushed out of the listing: the first look is inconclusive, a ' +
      'person is awaited while the looks go on every 300 ms — at least five, as retries of one activity, no history ' +
      'events — then a person confirms it with the object ID: recorded',
    effectId: 'hist:unknown-looks',
    expect: { stage: 'recorded' },
    async run(stack, effectId) {
      const watchful = stack.effectsWith({ readbackIntervalMs: 300, readbackMaxIntervalMs: 300 });
      await stack.withWorker(async () => {
        const ours = await heldPostOutOfListing(stack, effectId, 'History: five looks', watchful);
        await waitFor(
          async () =>
            (await stack.effects.status(effectId)).trail.evidence.filter((e) => e.kind === 'readback').length >= 6,
          'five looks after the first',
        );
        await handle(stack, effectId).signal(confirmDeliverySignal, {
          actor: OPS,
          reason: 'found it on the channel page',
          externalId: ours.id,
        });
        await stack.effects.result(effectId);
      });
    },
  },
  {
    path: 'unknown-look-now',
    shows:
      'v7: a key-less post held by the provider past our timeout: looks say in flight, then absent, and a person is ' +
      'awaited with the next look an hour away; the provider commits the post meanwhile, an operator signals look-now, ' +
      'and the look finds it: recorded',
    effectId: 'hist:unknown-look-now',
    expect: { stage: 'recorded' },
    async run(stack, effectId) {
      const patient = stack.effectsWith({
        callTimeoutMs: 1500,
        readbackIntervalMs: 3_600_000,
        readbackMaxIntervalMs: 3_600_000,
      });
      await stack.simulator.fault('delay_before_commit', { path: '/social/v1/posts', delayMs: 600_000 });
      await stack.withWorker(async () => {
        await patient.approve(postRequest(effectId, 'History: look now'));
        await waitForStage(stack, effectId, 'unknown', 'a human decision');
        await stack.simulator.releaseDelays();
        await waitFor(async () => (await socialPostsFor(stack, effectId)).length > 0, 'the held post to commit');
        await handle(stack, effectId).signal(lookNowSignal, { actor: OPS, reason: 'the provider is back' });
        await stack.effects.result(effectId);
      });
    },
  },
  {
    path: 'keyless-retry-refused',
    shows:
      'v7: a key-less post committed but its answer held; 100 later posts push it out of the listing (every look ' +
      'inconclusive); a person approves a retry, which the look after the in-flight window cannot allow (nothing ' +
      'dedupes a second post): refused; then confirm-delivery with the post: recorded by a human',
    effectId: 'hist:keyless-retry-refused',
    expect: { stage: 'recorded' },
    async run(stack, effectId) {
      // Accepted on its condition, then refused after the look: two rows.
      await refusedOverHiddenPost(
        stack,
        effectId,
        'History: no second post',
        approveRetrySignal,
        'nothing on the page',
        2,
      );
    },
  },
  {
    path: 'keyless-abandon-refused',
    shows:
      'v8: a key-less post committed but its answer held, then pushed out of the listing (every look inconclusive); a ' +
      'person abandons: the look cannot tell whether the post is there and the person did not say they checked, so ' +
      'the abandon is refused; then confirm-delivery with the post: recorded by a human',
    effectId: 'hist:keyless-abandon-refused',
    expect: { stage: 'recorded' },
    async run(stack, effectId) {
      await refusedOverHiddenPost(
        stack,
        effectId,
        'History: no abandon beside a post',
        abandonSignal,
        'looks stuck',
        1,
      );
    },
  },
];

// Every path has exactly one scenario (checked when the module loads: the capture relies on it).
const missing = HISTORY_PATHS.filter(
  (path) => HISTORY_SCENARIOS.filter((s) => s.path === path || s.previousRunPath === path).length !== 1,
);
if (missing.length) throw new Error(`history paths without exactly one scenario: ${missing.join(', ')}`);
