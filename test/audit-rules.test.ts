// The audit's rules on hand-made rows, records and a request log (no stack): what each finding needs, and
// the request-log check that runs once the provider keeps a log (GET /_control/requests).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { auditRows, effectOfKey, type LedgerRows } from '../scripts/audit/audit.js';
import type { DestinationObject, DestinationRecords } from '../scripts/audit/destination-records.js';
import { parseRequestLog } from '../scripts/audit/request-log.js';

const t = (s: number) => new Date(Date.UTC(2026, 10, 30, 12, 0, s));
const H = (c: string) => c.repeat(64);

function rows(): LedgerRows {
  return {
    effects: [
      { effectId: 'e1', destination: 'keyed-api', stage: 'recorded', approvedAt: t(0), stageChangedAt: t(5) },
      { effectId: 'e2', destination: 'social-feed', stage: 'unknown', approvedAt: t(0), stageChangedAt: t(5) },
    ],
    releases: [
      { effectId: 'e1', revision: 1, bodySha256: H('a') },
      { effectId: 'e2', revision: 1, bodySha256: H('b') },
    ],
    facts: [{ effectId: 'e1', destination: 'keyed-api', externalId: 'obj_1' }],
    attempts: [
      { effectId: 'e1', idempotencyKey: 'e1', startedAt: t(1) },
      { effectId: 'e2', idempotencyKey: 'e2', startedAt: t(1) },
    ],
  };
}

const records = (destination: string, keyed: boolean, objects: Partial<DestinationObject>[]): DestinationRecords => ({
  destination,
  keyed,
  objects: async () =>
    objects.map((o) => ({
      destination,
      id: 'x',
      effectId: null,
      bodySha256: null,
      createdAt: t(2).toISOString(),
      ...o,
    })),
});

describe('audit rules', () => {
  test('clean: one object per effect, the fact names it, keys from the effect ID', async () => {
    const report = await auditRows(rows(), {
      destinations: [
        records('keyed-api', true, [{ id: 'obj_1', effectId: 'e1', bodySha256: H('a'), idempotencyKey: 'e1' }]),
        records('social-feed', false, []),
      ],
      workflows: async () => ({ status: 'RUNNING', stage: 'unknown', awaiting: 'a human decision (…)' }),
      requireSettled: true,
    });
    assert.deepEqual(report.findings, []);
  });

  test('each drift is its own finding', async () => {
    const report = await auditRows(rows(), {
      destinations: [
        records('keyed-api', true, [
          { id: 'obj_1', effectId: 'e1', bodySha256: H('c'), idempotencyKey: 'run-7f' },
          { id: 'obj_2', effectId: 'e1', bodySha256: H('a'), idempotencyKey: 'e1' },
        ]),
        records('social-feed', false, [{ id: 'post_1', effectId: 'e2', bodySha256: H('b') }]),
      ],
      workflows: async () => ({ status: 'TERMINATED' }),
    });
    assert.deepEqual(report.findings.map((f) => `${f.kind} ${f.effectId}`).sort(), [
      'duplicate e1',
      'fact_object_differs e1',
      'foreign_key e1',
      'object_without_fact e2',
      'stuck e2',
    ]);
  });

  test('request log: a request before its attempt row, and a key not from the effect ID', async () => {
    const log = parseRequestLog({
      data: [
        {
          arrived_at: t(2).toISOString(),
          method: 'POST',
          path: '/v1/objects',
          idempotency_key: 'e1',
          body_sha256: H('a'),
        },
        {
          arrivedAt: t(3).toISOString(),
          method: 'POST',
          path: '/v1/objects',
          idempotencyKey: 'e1-retry-2',
          bodySha256: H('a'),
        },
        {
          at: t(0).toISOString(),
          method: 'POST',
          path: '/social/v1/posts',
          bodyHash: H('b'),
          fault: { kind: 'drop_after_commit' },
        },
        { at: t(4).toISOString(), method: 'GET', path: '/v1/objects' },
      ],
    });
    assert.equal(log[2]?.fault, 'drop_after_commit');
    const report = await auditRows(rows(), {
      destinations: [],
      requestLog: { available: true, requests: log },
    });
    assert.deepEqual(report.findings.map((f) => `${f.kind} ${f.effectId}`).sort(), [
      'foreign_key e1',
      'request_before_attempt e1', // two requests, one attempt row
      'request_before_attempt e2', // arrived before the attempt row
    ]);
    assert.equal(report.checked.requests, 3);
  });

  test('absent request log: the check is skipped and says why', async () => {
    const report = await auditRows(rows(), {
      destinations: [],
      requestLog: { available: false, why: 'GET /_control/requests answered 404' },
    });
    assert.ok(report.skipped.some((s) => s.includes('404')));
  });

  test('keys: the effect ID or effect ID~step name it; anything else does not', () => {
    assert.equal(effectOfKey('refund:A-1'), 'refund:A-1');
    assert.equal(effectOfKey('refund:A-1~email'), 'refund:A-1');
    assert.equal(effectOfKey('e1#attempt-2'), null);
  });
});
