// The worker's log line rules (workers/json-log.ts): one JSON object, the effect ID named on any line about
// an effect, and fields that may hold a payload or a credential redacted whatever the caller passed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { jsonLine } from '../workers/json-log.js';

const at = BigInt(Date.parse('2026-11-30T12:00:00Z')) * 1_000_000n;

test('an SDK line about an effect workflow names the effect; secrets and bodies are redacted', {
  timeout: 5000,
}, () => {
  const line = jsonLine({
    level: 'WARN',
    message: 'Activity failed',
    timestampNanos: at,
    meta: {
      workflowType: 'effectWorkflow',
      workflowId: 'refund:A-1',
      activityType: 'attemptOnce',
      error: new Error('provider answered 502'),
      request: { headers: { Authorization: 'Bearer sk_live_x' }, payload: { card: '4242' }, body: '{"amount":1}' },
    },
  });
  assert.deepEqual(JSON.parse(line), {
    time: '2026-11-30T12:00:00.000Z',
    level: 'warn',
    msg: 'Activity failed',
    effectId: 'refund:A-1',
    workflowType: 'effectWorkflow',
    workflowId: 'refund:A-1',
    activityType: 'attemptOnce',
    error: { name: 'Error', message: 'provider answered 502' },
    request: { headers: { Authorization: '[redacted]' }, payload: '[redacted]', body: '[redacted]' },
  });
});

test("another workflow's ID is not an effect ID; a process line has none", { timeout: 5000 }, () => {
  const reconciler = JSON.parse(
    jsonLine({
      level: 'INFO',
      message: 'x',
      timestampNanos: at,
      meta: { workflowType: 'ledgerReconciler', workflowId: 's-1' },
    }),
  );
  assert.equal(reconciler.effectId, undefined);
  assert.equal(
    JSON.parse(jsonLine({ level: 'INFO', message: 'Worker state changed', timestampNanos: at })).effectId,
    undefined,
  );
});
