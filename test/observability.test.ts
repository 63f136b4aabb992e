// What an operator sees of a worker process: its Prometheus endpoints (ours and the SDK runtime's) and its
// JSON log lines. Effects run through the real stack — the worker as its own process, a dev server, the
// ledger, the provider simulator — and the numbers scraped are checked against what happened.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { resultOf, waitForStage } from '../harness/effect-probes.js';
import { type Stack, startStack } from '../harness/local-stack.js';
import { postRequest, refundRequest, taskRequest } from '../harness/sample-requests.js';
import { startWorkerProcess, type WorkerProcess } from '../harness/worker-process.js';
import { freePort } from '../stack/free-port.js';
import { waitFor } from '../stack/wait-for.js';
import { TEST_TIMEOUT } from './support/isolation.js';

/** A string no line, history or metric may ever show: it rides in a payload. */
const PAYLOAD_SECRET = 'sk_live_payload_secret_7f3a9c';

async function scrape(address: string): Promise<string> {
  const response = await fetch(`http://${address}/metrics`);
  assert.equal(response.status, 200);
  return response.text();
}

/** The value of one sample, e.g. sample(text, 'effect_ledger_effects{stage="recorded"}'). */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

interface LogLine {
  msg: string;
  effectId?: string;
  outcome?: string;
}

/** Every line of a worker's output, each of which must be one JSON object. */
function logEntries(output: string): LogLine[] {
  return output
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      assert.doesNotThrow(() => JSON.parse(line), `not a JSON line: ${line}`);
      return JSON.parse(line) as LogLine;
    });
}

describe('observability of a worker process', { timeout: 300_000 }, () => {
  let stack: Stack;
  let worker: WorkerProcess;
  let metricsAddress: string;
  let sdkMetricsAddress: string;
  before(async () => {
    stack = await startStack({ purpose: 'observability' });
    metricsAddress = `127.0.0.1:${await freePort()}`;
    sdkMetricsAddress = `127.0.0.1:${await freePort()}`;
    worker = await startWorkerProcess(stack, undefined, {
      keepOutput: true,
      env: { EFFECT_LEDGER_METRICS_ADDRESS: metricsAddress, EFFECT_LEDGER_SDK_METRICS_ADDRESS: sdkMetricsAddress },
    });
  });
  after(async () => {
    await worker?.kill();
    await stack?.stop();
  });

  test(
    'metrics count what happened, per destination; logs are JSON with the effect ID and no payload',
    TEST_TIMEOUT,
    async () => {
      const quick = stack.effectsWith({ callTimeoutMs: 2000 });
      // recorded, rejected (a negative refund), and a post lost on the way that a person abandons.
      await stack.effects.approve(taskRequest('task:obs-1', PAYLOAD_SECRET));
      await stack.effects.approve(refundRequest('refund:obs-2', -5));
      assert.equal((await resultOf(stack, 'task:obs-1')).stage, 'recorded');
      assert.equal((await resultOf(stack, 'refund:obs-2')).stage, 'rejected');
      await stack.simulator.fault('fail_before_commit', { path: '/social/v1/posts' });
      await quick.approve(postRequest('post:obs-3', `launch ${PAYLOAD_SECRET}`));
      await waitForStage(stack, 'post:obs-3', 'unknown', 'a human decision');

      const waiting = await scrape(metricsAddress);
      assert.equal(sample(waiting, 'effect_ledger_effects{stage="unknown"}'), 1);
      assert.ok((sample(waiting, 'effect_ledger_oldest_unknown_age_seconds') ?? 0) > 0, 'the post waits in UNKNOWN');

      const decided = await stack.effects.decide('post:obs-3', 'abandon', {
        actor: 'ops@example.com',
        reason: 'obs test',
      });
      assert.equal(decided.accepted, true);
      assert.equal((await resultOf(stack, 'post:obs-3')).stage, 'abandoned');

      const text = await waitFor(async () => {
        const t = await scrape(metricsAddress);
        return (
          sample(t, 'effect_ledger_decisions_total{destination="social-feed",decision="abandon",accepted="true"}') ===
            1 && t
        );
      }, 'the decision to be counted');
      process.stdout.write(
        `# metrics sample:\n${text
          .split('\n')
          .filter((l) => l.startsWith('effect_ledger'))
          .join('\n')}\n`,
      );
      const expected: Record<string, number> = {
        'effect_ledger_effects{stage="recorded"}': 1,
        'effect_ledger_effects{stage="rejected"}': 1,
        'effect_ledger_effects{stage="abandoned"}': 1,
        'effect_ledger_effects{stage="unknown"}': 0,
        effect_ledger_oldest_unknown_age_seconds: 0,
        effect_ledger_oldest_unsettled_age_seconds: 0,
        'effect_ledger_attempts_total{destination="keyed-api"}': 2,
        'effect_ledger_attempts_total{destination="social-feed"}': 1,
        'effect_ledger_outcomes_total{destination="keyed-api",outcome="confirmed"}': 1,
        'effect_ledger_outcomes_total{destination="keyed-api",outcome="rejected"}': 1,
        'effect_ledger_outcomes_total{destination="social-feed",outcome="unknown"}': 1,
        'effect_ledger_decisions_total{destination="social-feed",decision="abandon",accepted="true"}': 1,
      };
      for (const [series, value] of Object.entries(expected)) assert.equal(sample(text, series), value, series);
      // The post was read back at least once before it waited for a person; nothing found (the request was lost).
      assert.equal(sample(text, 'effect_ledger_readbacks_total{destination="social-feed",verdict="found"}'), undefined);
      assert.ok(
        (sample(text, 'effect_ledger_readbacks_total{destination="social-feed",verdict="absent"}') ?? 0) +
          (sample(text, 'effect_ledger_readbacks_total{destination="social-feed",verdict="inconclusive"}') ?? 0) >=
          1,
      );

      // The SDK runtime's own endpoint: Core's metrics about this worker.
      const sdk = await scrape(sdkMetricsAddress);
      assert.match(sdk, /^temporal_activity_execution_latency\w*\{/m);
      assert.match(sdk, /^temporal_workflow_completed\{/m);

      // The decision's line may still be in the pipe when its count is scraped.
      const entries = await waitFor(async () => {
        const parsed = logEntries(worker.output());
        return parsed.some((e) => e.msg === 'decision recorded' && e.effectId === 'post:obs-3') && parsed;
      }, "the decision's log line");
      const answered = entries.find((e) => e.msg === 'attempt answered' && e.effectId === 'task:obs-1');
      assert.equal(answered?.outcome, 'confirmed');
      assert.ok(entries.some((e) => e.effectId === 'refund:obs-2' && e.outcome === 'rejected'));
      assert.ok(!worker.output().includes(PAYLOAD_SECRET), 'a payload reached the worker log');
    },
  );
});
