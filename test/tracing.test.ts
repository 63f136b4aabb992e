// An effect is one trace (docs/tracing.md): the approving service and the worker (its own process) export over
// OTLP to a real receiver on loopback (Jaeger, harness/jaeger.ts), configured only by OTEL_* variables; the trees
// asserted are what Jaeger holds. A happy effect: approve → workflow → attempt → the provider's HTTP call, with
// the effect's attributes. A lost answer settled by readback after a person's retry: the readback looks, the
// decision, the retry linked to it, across continue-as-new, all one trace.
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { EffectLedgerClient } from '../client/effect-ledger-client.js';
import { startTracing, type Tracing, tracingClientInterceptors } from '../client/tracing.js';
import { latestRunId, waitForStage } from '../harness/effect-probes.js';
import { effectIdOf, HISTORIES_DIR, parseHistoryFileName, readHistoryFile } from '../harness/histories/history-file.js';
import { type JaegerServer, startJaeger } from '../harness/jaeger.js';
import { type Stack, startStack } from '../harness/local-stack.js';
import { postRequest, taskRequest } from '../harness/sample-requests.js';
import { renderTreeSvg, renderTreeText, type SpanRecord } from '../harness/trace-tree.js';
import { startWorkerProcess, type WorkerProcess } from '../harness/worker-process.js';
import { waitFor, within } from '../stack/wait-for.js';
import { projectRoot } from '../workers/config.js';
import { bundleEffectWorkflows } from '../workers/effect-worker.js';
import { tracingSinks } from '../workers/tracing.js';
import { LAST_UNVERSIONED_VERSION } from '../workflows/version.js';
import { isolateEachTest, TEST_TIMEOUT } from './support/isolation.js';

const SERVICE = 'approving-service';
const WORKER_SERVICE = 'effect-ledger-worker';
const KIND = { internal: 1, client: 3 } as const;

describe('an effect is one trace', () => {
  let jaeger: JaegerServer;
  let tracing: Tracing;
  let stack: Stack;
  let worker: WorkerProcess;
  let effects: EffectLedgerClient;
  let client: Client;

  before(async () => {
    jaeger = await startJaeger();
    // Only the standard variables: this process (the approving service) and the worker's read the same.
    Object.assign(process.env, {
      OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpHttpUrl,
      OTEL_SERVICE_NAME: SERVICE,
      // Spans leave within 100 ms of ending, not the default 5 s.
      OTEL_BSP_SCHEDULE_DELAY: '100',
    });
    const started = await startTracing();
    assert.ok(started, 'OTEL_EXPORTER_OTLP_ENDPOINT asks for traces');
    tracing = started;
    // The call timeout is the in-flight window readback waits out before "absent" (social-feed's own: seconds).
    stack = await startStack({ readbackIntervalMs: 1000, callTimeoutMs: 2000 });
    worker = await startWorkerProcess(stack, stack.simulator.url, { env: { OTEL_SERVICE_NAME: WORKER_SERVICE } });
    client = new Client({
      connection: stack.env.connection,
      namespace: stack.namespace,
      interceptors: tracingClientInterceptors(),
    });
    effects = new EffectLedgerClient({
      client,
      db: stack.ledger.db,
      taskQueue: stack.taskQueue,
      callTimeoutMs: 2000,
      readbackIntervalMs: 1000,
      readbackMaxIntervalMs: 1000,
      absenceGraceMs: 0,
      // Every wake of a wait (an operator's look-now here) ends its run: the next continues it (and the trace).
      readbacksPerRun: 1,
    });
  });
  after(async () => {
    await worker?.kill();
    await stack?.stop();
    await tracing?.shutdown();
    await jaeger?.stop();
  });
  isolateEachTest(() => stack);

  /** The effect's trace once `complete` holds for its spans (the workflow's arrive when the workflow closes). */
  async function traceOf(effectId: string, complete: (spans: SpanRecord[]) => boolean): Promise<SpanRecord[]> {
    const [traceId] = await waitFor(async () => {
      const found = await jaeger.findTraces(SERVICE, { 'effect.id': effectId });
      return found.length ? found : undefined;
    }, `Jaeger to hold ${effectId}'s approval`);
    // Every span anywhere that names the effect is in this one trace.
    return waitFor(async () => {
      const spans = await jaeger.trace(traceId!);
      if (!complete(spans)) return undefined;
      const elsewhere = [
        ...(await jaeger.findTraces(SERVICE, { 'effect.id': effectId })),
        ...(await jaeger.findTraces(WORKER_SERVICE, { 'effect.id': effectId })),
      ].filter((id) => id !== traceId);
      assert.deepEqual(elsewhere, [], 'no span of the effect is in another trace');
      return spans;
    }, `the spans of ${effectId}'s trace`);
  }

  const named = (spans: SpanRecord[], name: string) => spans.filter((s) => s.name === name);
  const one = (spans: SpanRecord[], name: string) => {
    const found = named(spans, name);
    assert.equal(found.length, 1, `one ${name} span, found ${found.length}: ${spans.map((s) => s.name).join(', ')}`);
    return found[0]!;
  };
  const parentOf = (spans: SpanRecord[], span: SpanRecord) => spans.find((s) => s.spanId === span.parentSpanId);
  /** Asserts the chain of names from `span` up to the trace's root, and the services. */
  function assertAncestry(spans: SpanRecord[], span: SpanRecord, expected: Array<[string, string]>) {
    const chain: Array<[string, string]> = [];
    for (let s: SpanRecord | undefined = span; s; s = parentOf(spans, s)) chain.push([s.name, s.service]);
    assert.deepEqual(chain, expected);
  }

  test(
    'a happy effect: approve → workflow → attempt activity → the provider HTTP call, with the effect’s attributes',
    TEST_TIMEOUT,
    async () => {
      const effectId = 'trace:happy';
      stack.approvedEffectIds.add(effectId);
      await effects.approve(taskRequest(effectId, 'request-trace'));
      assert.equal((await within(effects.result(effectId), 'the effect', 60_000)).stage, 'recorded');
      const spans = await traceOf(effectId, (s) => named(s, 'RunWorkflow:effectWorkflow').length > 0);
      drawn('happy-effect', effectId, spans);

      const http = one(spans, 'POST');
      assertAncestry(spans, http, [
        ['POST', WORKER_SERVICE],
        ['send keyed-api', WORKER_SERVICE],
        ['RunActivity:attemptOnce', WORKER_SERVICE],
        ['StartActivity:attemptOnce', WORKER_SERVICE],
        ['RunWorkflow:effectWorkflow', WORKER_SERVICE],
        ['StartWorkflow:effectWorkflow', SERVICE],
        ['approve keyed-api task.create', SERVICE],
      ]);
      const url = new URL(stack.simulator.url);
      assert.equal(http.kind, KIND.client);
      assert.deepEqual(
        {
          method: http.attributes['http.request.method'],
          status: http.attributes['http.response.status_code'],
          url: http.attributes['url.full'],
          address: http.attributes['server.address'],
          port: http.attributes['server.port'],
        },
        { method: 'POST', status: 200, url: `${url.origin}/v1/objects`, address: url.hostname, port: Number(url.port) },
      );
      const effect = {
        'effect.id': effectId,
        'effect.step': 'main',
        'effect.revision': 1,
        'effect.attempt': 1,
        'effect.idempotency_key': effectId,
        'effect.outcome': 'confirmed',
      };
      const attempt = one(spans, 'RunActivity:attemptOnce');
      assert.deepEqual(pick(attempt.attributes, Object.keys(effect)), effect);
      const send = one(spans, 'send keyed-api');
      assert.equal(send.kind, KIND.internal);
      assert.deepEqual(pick(send.attributes, [...Object.keys(effect), 'effect.destination', 'effect.operation']), {
        ...effect,
        'effect.destination': 'keyed-api',
        'effect.operation': 'task.create',
      });
      const approve = one(spans, 'approve keyed-api task.create');
      assert.deepEqual(pick(approve.attributes, ['effect.id', 'effect.created', 'effect.stage']), {
        'effect.id': effectId,
        'effect.created': true,
        'effect.stage': 'released',
      });
    },
  );

  test(
    "a lost answer settled by readback after a person's retry: the looks, the decision, the retry linked to it, one trace across continue-as-new",
    TEST_TIMEOUT,
    async () => {
      const effectId = 'trace:lost-post';
      stack.approvedEffectIds.add(effectId);
      // Attempt 1: the connection is cut before the post is stored. Readback proves it absent; the key-less feed
      // never retries by itself, so a person is awaited, the looks going on (each ending its run).
      await stack.simulator.fault('fail_before_commit', { path: '/social/v1/posts' });
      await effects.approve(postRequest(effectId, 'Traced launch'));
      await waitForStage(stack, effectId, 'unknown', 'a human decision');
      // An operator signals look-now (from the Web UI: a reset of the look would wake nothing): the wait wakes, and
      // (one wake a run) continues as new.
      const firstRun = await latestRunId(stack, effectId);
      await effects.lookNow(effectId, { actor: 'ops@example.com', reason: 'the feed is back' }, { by: 'signal' });
      await waitFor(async () => {
        const run = await latestRunId(stack, effectId);
        return run !== firstRun && (await waitForStage(stack, effectId, 'unknown', 'a human decision'));
      }, 'the wait to continue as new');
      // Attempt 2, the person's retry: stored, its answer lost. Readback finds it: the fact.
      await stack.simulator.fault('drop_after_commit', { path: '/social/v1/posts' });
      const decided = await effects.decide(effectId, 'approve-retry', {
        actor: 'ops@example.com',
        reason: 'checked the feed: nothing there',
      });
      assert.equal(decided.accepted, true);
      const result = await within(effects.result(effectId), 'the effect', 60_000);
      assert.equal(result.stage, 'recorded');
      const lastRun = await latestRunId(stack, effectId);

      const spans = await traceOf(effectId, (s) =>
        named(s, 'RunWorkflow:effectWorkflow').some((run) => run.attributes.runId === lastRun),
      );
      drawn('lost-answer-retry', effectId, spans);
      // One trace: every span descends from the approval.
      const approve = one(spans, 'approve social-feed post.publish');
      const roots = spans.filter((s) => !parentOf(spans, s));
      assert.deepEqual(roots, [approve], 'the approval is the only root');
      const runs = named(spans, 'RunWorkflow:effectWorkflow');
      assert.ok(runs.length >= 2, `the wait continued as new: ${runs.length} runs`);
      // Each later run is a child of the continue-as-new of the run before it.
      for (const later of runs.slice(1))
        assert.equal(parentOf(spans, later)?.name, 'ContinueAsNew:effectWorkflow', 'a run continues its trace');

      // The looks: the attempts of the watch activity (a wait's looks are its retries) that read the feed.
      const looks = named(spans, 'RunActivity:watchForObject').filter((l) => 'effect.readback.verdict' in l.attributes);
      const verdicts = looks.map((l) => l.attributes['effect.readback.verdict']);
      assert.ok(verdicts.includes('absent'), `a look proved absence: ${verdicts}`);
      assert.equal(verdicts.at(-1), 'found', 'the last look found the post');
      for (const look of looks)
        assert.deepEqual(pick(look.attributes, ['effect.id', 'effect.step', 'effect.revision']), {
          'effect.id': effectId,
          'effect.step': 'main',
          'effect.revision': 1,
        });
      // Each look's provider call, with its protocol's spans (the feed's listing is read by GET).
      for (const look of looks) {
        const read = spans.find((s) => s.parentSpanId === look.spanId && s.name === 'readBack social-feed');
        assert.ok(read, 'a look reads the feed');
        assert.ok(
          spans.some((s) => s.parentSpanId === read.spanId && s.name === 'GET'),
          'by GET',
        );
      }

      // The person's decision: a span of the effect's trace (under a run), linked to the update that carried it.
      const decision = one(spans, 'decision approve-retry');
      assert.equal(parentOf(spans, decision)?.name, 'RunWorkflow:effectWorkflow');
      assert.equal(decision.attributes['effect.decision'], 'approve-retry');
      assert.equal(decision.links.length, 1);
      const [delivered] = decision.links;
      const handled = (await jaeger.trace(delivered!.traceId)).find((s) => s.spanId === delivered!.spanId);
      assert.equal(handled?.name, 'HandleUpdate:decide', 'linked to the workflow handling the update');

      // The retry: attempt 2, linked to the decision, in the workflow and in the activity.
      const attempts = named(spans, 'RunActivity:attemptOnce');
      assert.deepEqual(
        attempts.map((a) => [a.attributes['effect.attempt'], a.attributes['effect.outcome']]),
        [
          [1, 'unknown'],
          [2, 'unknown'],
        ],
      );
      const retry = attempts[1]!;
      assert.deepEqual(retry.links, [{ traceId: decision.traceId, spanId: decision.spanId }]);
      assert.deepEqual(parentOf(spans, retry)?.links, [{ traceId: decision.traceId, spanId: decision.spanId }]);
      assert.deepEqual(attempts[0]!.links, [], 'the first attempt follows no decision');
      const post = spans.find(
        (s) => s.name === 'POST' && parentOf(spans, parentOf(spans, s)!)?.spanId === retry.spanId,
      );
      assert.ok(post, "the retry's POST");
      assert.equal(post.status, 2, 'its answer was lost: an error');
      // Decision, retry and the look that found the post come in that order.
      const found = looks.at(-1)!;
      assert.ok(decision.startNs < retry.startNs && retry.startNs < found.startNs);
    },
  );

  test(
    'histories recorded without tracing replay on the bundles with the tracing interceptors',
    TEST_TIMEOUT,
    async () => {
      const files = readdirSync(HISTORIES_DIR).filter((f) => f.endsWith('.json'));
      const failed: string[] = [];
      // Each build's histories against its code (test/replay.test.ts): v1–v6 the frozen v6, v7 on the current.
      for (const code of ['v6', 'current'] as const) {
        const set = files.filter(
          (f) => (parseHistoryFileName(f)?.version ?? 0) <= LAST_UNVERSIONED_VERSION === (code === 'v6'),
        );
        const histories = set.map((file) => readHistoryFile(join(HISTORIES_DIR, file)));
        const bundle = await bundleEffectWorkflows({ code, tracing: true });
        let i = 0;
        for await (const result of Worker.runReplayHistories(
          // The sink a worker without tracing gives the bundle's workflow spans: they are dropped.
          { workflowBundle: bundle, sinks: tracingSinks(undefined, undefined) },
          histories.map((history) => ({ workflowId: effectIdOf(history), history })),
        )) {
          if (result.error) failed.push(`${set[i]}: ${result.error.name}: ${result.error.message}`);
          i++;
        }
        assert.equal(i, set.length);
      }
      assert.deepEqual(failed, []);
    },
  );
});

/** The tree as Jaeger holds it, drawn into .data/traces/ (docs/tracing.md shows the lost answer's). */
function drawn(name: string, effectId: string, spans: SpanRecord[]) {
  const dir = join(projectRoot, '.data/traces');
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, `${name}.svg`),
    renderTreeSvg(spans, `${effectId}: one effect, one trace (as Jaeger holds it)`),
  );
  writeFileSync(join(dir, `${name}.txt`), `${renderTreeText(spans)}\n`);
}

function pick(attributes: SpanRecord['attributes'], keys: string[]) {
  return Object.fromEntries(keys.filter((k) => k in attributes).map((k) => [k, attributes[k]]));
}
