// Another team's workflow, in a namespace of its own, approves effects through the Nexus endpoint `effect-ledger`
// (docs/nexus.md) and awaits their results: the worker plugin hosts the service, the effect's run is the one
// EffectLedgerClient.approve starts, a repeat joins it or is answered with its result, a conflict and bad input
// fail the caller's operation with why, and nothing is written or sent for them.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { dirname } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { ApplicationFailure, Client, WorkflowFailedError } from '@temporalio/client';
import { NexusOperationFailure } from '@temporalio/common';
import { bundleWorkflowCode, DefaultLogger, Worker } from '@temporalio/worker';
import { assertProviderSaw, objectsFor, providerPostsFor, resultOf } from '../harness/effect-probes.js';
import { type Stack, startStack } from '../harness/local-stack.js';
import { refundRequest } from '../harness/sample-requests.js';
import { readEffect } from '../ledger/trail.js';
import { locateTemporalCli } from '../stack/temporal-cli.js';
import { waitFor } from '../stack/wait-for.js';
import { blockAfter, readDoc } from './support/doc-blocks.js';
import { isolateEachTest, TEST_TIMEOUT } from './support/isolation.js';
import { approveEffect, effectStatus } from './support/nexus-caller.js';

/** The calling team's namespace, created with the dev server. */
const CALLERS = 'payments-team';
const CALLERS_QUEUE = 'payments-team';

describe('approving effects through Nexus, from another namespace', () => {
  let stack: Stack;
  let callers: Client;
  let stopWorkers: () => Promise<void>;
  before(async () => {
    stack = await startStack({ purpose: 'nexus', devServerArgs: ['--namespace', CALLERS] });
    await createEndpoint(stack);
    callers = new Client({ connection: stack.env.connection, namespace: CALLERS });
    const callerWorker = await Worker.create({
      connection: stack.env.nativeConnection,
      namespace: CALLERS,
      taskQueue: CALLERS_QUEUE,
      workflowBundle: await bundleWorkflowCode({
        workflowsPath: fileURLToPath(new URL('./support/nexus-caller.ts', import.meta.url)),
        logger: new DefaultLogger('WARN'),
      }),
    });
    const callerRunning = callerWorker.run();
    const effectWorker = await stack.startWorker();
    stopWorkers = async () => {
      callerWorker.shutdown();
      await Promise.all([callerRunning, effectWorker.stop()]);
    };
  });
  after(async () => {
    await stopWorkers?.();
    await stack?.stop();
  });
  isolateEachTest(() => stack);

  let callerCount = 0;
  /** A caller workflow in the other namespace, started now. */
  function startCaller<F extends typeof approveEffect | typeof effectStatus>(fn: F, ...args: Parameters<F>) {
    return callers.workflow.start(fn, {
      args,
      workflowId: `caller-${++callerCount}`,
      taskQueue: CALLERS_QUEUE,
      workflowExecutionTimeout: '2 minutes',
    });
  }
  const approve = async (approval: Parameters<typeof approveEffect>[0]) =>
    (await startCaller(approveEffect, approval)).result();

  /** How many runs the effect's workflow ID has had. */
  const runsOf = async (effectId: string) =>
    (await stack.env.client.workflow.count(`WorkflowId = "${effectId}"`)).count;

  /** Approved through this process's client (the other path to the same ledger), run to its end. */
  async function approvedAndEnded(request: ReturnType<typeof refundRequest>) {
    await stack.effects.approve(request);
    return resultOf(stack, request.effectId);
  }

  test(
    'a workflow in another namespace approves a refund and gets its result: recorded, the object at the keyed API, one ledger effect; approved again, the same result at once',
    TEST_TIMEOUT,
    async () => {
      // The approval docs/nexus.md shows, as a caller in any language sends it.
      const nexusDoc = readDoc('docs/nexus.md');
      const request = JSON.parse(blockAfter(nexusDoc, 'test/nexus.test.ts approves the block below'));
      const caller = await startCaller(approveEffect, request);
      const first = await caller.result();
      assert.equal(first.result.stage, 'recorded');
      const shown = JSON.parse(blockAfter(nexusDoc, 'test/nexus.test.ts gets a result with the fields'));
      assert.deepEqual(Object.keys(first.result).sort(), Object.keys(shown).sort(), 'the fields docs/nexus.md shows');
      const [object] = await objectsFor(stack, request.effectId);
      assert.ok(object, 'the refund is at the keyed API');
      assert.equal(first.result.externalId, object.id, 'the caller got the object the provider made');
      assert.ok(first.token, 'an asynchronous operation, backed by the effect run');

      const { trail } = await stack.effects.status(request.effectId);
      assert.equal(trail.effect.stage, 'recorded');
      assert.equal(trail.effect.approvedBy, request.approvedBy);
      assert.equal(trail.releases.length, 1);
      assert.equal(trail.attempts.length, 1);
      assert.equal(trail.fact?.externalId, object.id);
      assert.equal(trail.fact?.confirmedBy, 'provider_response');
      await assertProviderSaw(stack, request.effectId, { posts: 1 });
      // The effect's run was started by the caller's operation: it completes it, and links back to it.
      const started = (await stack.env.client.workflow.getHandle(request.effectId).fetchHistory()).events?.[0];
      const [callback] = started?.workflowExecutionStartedEventAttributes?.completionCallbacks ?? [];
      const link = callback?.links?.[0]?.workflowEvent;
      assert.deepEqual([link?.namespace, link?.workflowId], [CALLERS, caller.workflowId]);

      const again = await approve(request);
      assert.deepEqual(again.result, first.result, 'the same result');
      assert.ok(!again.token, 'answered at once (no token): the effect had ended, no run was started');
      assert.equal(await runsOf(request.effectId), 1);
      await assertProviderSaw(stack, request.effectId, { posts: 1 });
      assert.equal((await stack.effects.status(request.effectId)).trail.attempts.length, 1);
    },
  );

  test(
    'a repeat approval while the refund is in flight joins its run: one object, one run, both callers get the same operation and result',
    TEST_TIMEOUT,
    async () => {
      const request = refundRequest('refund:nexus-2', 2500);
      // The provider makes the refund at once and holds its answer until the second caller is in.
      await stack.simulator.fault('delay_after_commit', { path: '/v1/objects', delayMs: 60_000 });
      const first = await startCaller(approveEffect, request);
      await waitFor(async () => (await providerPostsFor(stack, request.effectId)).length === 1, 'the refund sent');
      const second = await startCaller(approveEffect, request);
      await waitFor(
        async () => (await second.fetchHistory()).events?.some((e) => e.nexusOperationStartedEventAttributes) ?? false,
        "the second caller's operation started",
      );
      assert.equal(await stack.simulator.releaseDelays(), 1);

      const [a, b] = await Promise.all([first.result(), second.result()]);
      assert.equal(a.result.stage, 'recorded');
      assert.deepEqual(b, a, 'the same operation (its token names the run) and the same result');
      assert.equal(await runsOf(request.effectId), 1);
      const description = await stack.env.client.workflow.getHandle(request.effectId).describe();
      assert.equal(description.raw.callbacks?.length, 2, "the run completes both callers' operations");
      assert.equal((await objectsFor(stack, request.effectId)).length, 1);
      await assertProviderSaw(stack, request.effectId, { posts: 1 });
      const { trail } = await stack.effects.status(request.effectId);
      assert.equal(trail.attempts.length, 1);
      assert.equal(trail.fact?.externalId, a.result.externalId);
    },
  );

  test(
    "a caller's cancellation does not cancel the effect: the handler refuses it, the refund is made and recorded once",
    TEST_TIMEOUT,
    async () => {
      const request = refundRequest('refund:nexus-cancel', 900);
      await stack.simulator.fault('delay_after_commit', { path: '/v1/objects', delayMs: 60_000 });
      const caller = await startCaller(approveEffect, request);
      await waitFor(async () => (await providerPostsFor(stack, request.effectId)).length === 1, 'the refund sent');
      await caller.cancel();
      const refused = await waitFor(
        async () =>
          (await caller.fetchHistory()).events?.find((e) => e.nexusOperationCancelRequestFailedEventAttributes)
            ?.nexusOperationCancelRequestFailedEventAttributes?.failure,
        "the caller's cancel request answered",
      );
      assert.match(refused.message ?? '', /not cancelled by its caller/);
      assert.equal(await stack.simulator.releaseDelays(), 1);
      // The caller waited for the effect (the default cancellation type waits for the operation's end) and got it.
      const { result } = await caller.result();
      assert.equal(result.stage, 'recorded');
      assert.equal(result.externalId, (await objectsFor(stack, request.effectId))[0]?.id);
      assert.equal((await stack.effects.status(request.effectId)).trail.fact?.externalId, result.externalId);
      await assertProviderSaw(stack, request.effectId, { posts: 1 });
    },
  );

  test(
    'the same effect ID with another amount fails the caller with an operation error naming the conflict; nothing written, nothing sent, no new run',
    TEST_TIMEOUT,
    async () => {
      await approvedAndEnded(refundRequest('refund:nexus-3', 4000));
      const before = await stack.effects.status('refund:nexus-3');
      const failure = await refusal(approve(refundRequest('refund:nexus-3', 4500)));
      assert.equal(failure.type, 'EffectConflictError');
      assert.match(failure.message, /effect refund:nexus-3 was approved with other parameters/);
      assert.equal(failure.nonRetryable, true);
      assert.deepEqual((await stack.effects.status('refund:nexus-3')).trail, before.trail);
      assert.equal(await runsOf('refund:nexus-3'), 1);
      await assertProviderSaw(stack, 'refund:nexus-3', { posts: 1 });
    },
  );

  test(
    "a payload the destination's contract refuses fails the caller with an operation error naming the field; nothing written, no run",
    TEST_TIMEOUT,
    async () => {
      const request = { ...refundRequest('refund:nexus-4', 100), payload: { charge: 'ch_1', amount: 'a lot' } };
      const failure = await refusal(approve(request));
      assert.equal(failure.type, 'InvalidEffectRequestError');
      assert.match(failure.message, /amount/);
      assert.match(failure.message, /currency/);
      assert.equal(failure.nonRetryable, true);
      assert.equal(await readEffect(stack.ledger.db, 'refund:nexus-4'), null, 'no ledger row');
      assert.equal(await runsOf('refund:nexus-4'), 0);
    },
  );

  test(
    'status answers what effects.status answers, from the ledger; an effect ID the ledger lacks is an operation error',
    TEST_TIMEOUT,
    async () => {
      await approvedAndEnded(refundRequest('refund:nexus-5', 700));
      const report = await (await startCaller(effectStatus, 'refund:nexus-5')).result();
      assert.equal(report.trail.effect.stage, 'recorded');
      assert.deepEqual(report, JSON.parse(JSON.stringify(await stack.effects.status('refund:nexus-5'))));
      const failure = await refusal((await startCaller(effectStatus, 'refund:nowhere')).result());
      assert.equal(failure.type, 'EffectNotFoundError');
      assert.match(failure.message, /no effect refund:nowhere in the ledger/);
    },
  );
});

/** The endpoint, created with the command docs/nexus.md and deploy.md give, aimed at the stack's namespace and queue. */
async function createEndpoint(stack: Stack): Promise<void> {
  const shown = blockAfter(readDoc('docs/nexus.md'), 'test/nexus.test.ts runs the block below');
  assert.equal(blockAfter(readDoc('docs/deploy.md'), "test/nexus.test.ts checks the block below is nexus.md's"), shown);
  const command = shown
    .replace(/--target-namespace \S+/, `--target-namespace ${stack.namespace}`)
    .replace(/--target-task-queue \S+/, `--target-task-queue ${stack.taskQueue}`);
  const cli = locateTemporalCli();
  assert.equal(cli.type, 'existing-path', 'the Temporal CLI');
  await promisify(execFile)('bash', ['-euo', 'pipefail', '-c', command], {
    env: { ...process.env, PATH: `${dirname(cli.path)}:${process.env.PATH}`, TEMPORAL_ADDRESS: stack.env.address },
    timeout: 30_000,
  });
}

/** The typed refusal under a caller's failed Nexus operation: what a caller in any language matches on. */
async function refusal(result: Promise<unknown>): Promise<ApplicationFailure> {
  const error = await result.then(
    () => assert.fail('the caller succeeded'),
    (e: unknown) => e,
  );
  assert.ok(error instanceof WorkflowFailedError, String(error));
  assert.ok(error.cause instanceof NexusOperationFailure, String(error.cause));
  let cause: unknown = error.cause;
  const chain: string[] = [];
  while (cause instanceof Error) {
    chain.push(`${cause.constructor.name}: ${cause.message}`);
    if (cause instanceof ApplicationFailure && cause.type !== 'OperationError') return cause;
    cause = cause.cause;
  }
  return assert.fail(`no typed refusal under the operation's failure: ${chain.join(' ← ')}`);
}
