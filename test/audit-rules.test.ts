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
      { effectId: 'e1', revision: 1, step: 'main', destination: 'keyed-api', bodySha256: H('a') },
      { effectId: 'e2', revision: 1, step: 'main', destination: 'social-feed', bodySha256: H('b') },
    ],
    facts: [{ effectId: 'e1', step: 'main', destination: 'keyed-api', externalId: 'obj_1' }],
    attempts: [
      { effectId: 'e1', step: 'main', idempotencyKey: 'e1', startedAt: t(1) },
      { effectId: 'e2', step: 'main', idempotencyKey: 'e2', startedAt: t(1) },
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
    assert.equal(effectOfKey('e1~main'), null, 'the main step is the bare effect ID, never ~main');
    assert.equal(effectOfKey('e1~Email'), null);
  });

  /** e3: a task at the keyed API (main), then a post on the social feed (step announce). */
  function multiStepRows(stage: string, announced: boolean): LedgerRows {
    const base = rows();
    return {
      effects: [
        ...base.effects,
        { effectId: 'e3', destination: 'keyed-api', stage, approvedAt: t(0), stageChangedAt: t(6) },
      ],
      releases: [
        ...base.releases,
        { effectId: 'e3', revision: 1, step: 'main', destination: 'keyed-api', bodySha256: H('c') },
        { effectId: 'e3', revision: 1, step: 'announce', destination: 'social-feed', bodySha256: H('d') },
      ],
      facts: [
        ...base.facts,
        { effectId: 'e3', step: 'main', destination: 'keyed-api', externalId: 'obj_3' },
        ...(announced ? [{ effectId: 'e3', step: 'announce', destination: 'social-feed', externalId: 'post_3' }] : []),
      ],
      attempts: [
        ...base.attempts,
        { effectId: 'e3', step: 'main', idempotencyKey: 'e3', startedAt: t(1) },
        { effectId: 'e3', step: 'announce', idempotencyKey: 'e3~announce', startedAt: t(3) },
      ],
    };
  }
  const e1Object = { id: 'obj_1', effectId: 'e1', bodySha256: H('a'), idempotencyKey: 'e1' };
  const e3Task = { id: 'obj_3', effectId: 'e3', bodySha256: H('c'), idempotencyKey: 'e3' };
  const e3Post = { id: 'post_3', effectId: 'e3~announce', bodySha256: H('d') };
  const settledView = async () => ({ status: 'RUNNING', stage: 'unknown', awaiting: 'a human decision (…)' });

  test('multi-step: each step has its object at its own destination and its fact; no findings', async () => {
    const report = await auditRows(multiStepRows('recorded', true), {
      destinations: [records('keyed-api', true, [e1Object, e3Task]), records('social-feed', false, [e3Post])],
      workflows: settledView,
      requireSettled: true,
      requestLog: {
        available: true,
        requests: parseRequestLog({
          data: [
            { at: t(2).toISOString(), method: 'POST', path: '/v1/objects', idempotencyKey: 'e1', bodySha256: H('a') },
            { at: t(2).toISOString(), method: 'POST', path: '/v1/objects', idempotencyKey: 'e3', bodySha256: H('c') },
            { at: t(4).toISOString(), method: 'POST', path: '/social/v1/posts', bodySha256: H('d') },
          ],
        }),
      },
    });
    assert.deepEqual(report.findings, []);
    assert.equal(report.checked.objects, 3);
    assert.equal(report.checked.facts, 3);
    assert.equal(report.checked.requests, 3);
  });

  test('multi-step drift: per step, at the step’s destination', async () => {
    const report = await auditRows(multiStepRows('rejected', false), {
      destinations: [
        records('keyed-api', true, [
          e1Object,
          e3Task,
          // The announce step's reference at the wrong destination, under its own key.
          { id: 'obj_9', effectId: 'e3~announce', bodySha256: H('d'), idempotencyKey: 'e3~announce' },
          // A step the effect does not have.
          { id: 'obj_8', effectId: 'e3~email', bodySha256: H('e'), idempotencyKey: 'e3~email' },
        ]),
        // The announce step's post twice, and no fact for it.
        records('social-feed', false, [e3Post, { ...e3Post, id: 'post_4' }]),
      ],
      workflows: settledView,
      requestLog: {
        available: true,
        requests: parseRequestLog({
          // The announce step's body arrived before its attempt row (t(3)).
          data: [{ at: t(2).toISOString(), method: 'POST', path: '/social/v1/posts', bodySha256: H('d') }],
        }),
      },
    });
    assert.deepEqual(report.findings.map((f) => `${f.kind} ${f.effectId} ${f.destination}`).sort(), [
      'duplicate e3 social-feed',
      'object_without_effect e3 keyed-api',
      'object_without_effect e3 keyed-api',
      'object_without_fact e3 social-feed',
      'request_before_attempt e3 social-feed',
    ]);
    assert.ok(report.findings.some((f) => f.kind === 'duplicate' && f.detail.includes('step announce')));
  });
});

describe('an object out of every readback’s sight (a capped listing moved past it)', () => {
  const waiting = async () => ({ status: 'RUNNING' as const, stage: 'unknown', awaiting: 'a human decision (…)' });
  /** The feed shows its newest 3; e2's post and `newer` others after it. */
  const feed = (newer: number): DestinationRecords => ({
    ...records('social-feed', false, [
      ...Array.from({ length: newer }, (_, i) => ({ id: `crowd_${i}`, createdAt: t(10 + i).toISOString() })),
      { id: 'post_e2', effectId: 'e2', bodySha256: H('b') },
    ]),
    shownAtMost: 3,
  });
  const kinds = async (destination: DestinationRecords, workflows = waiting) =>
    (
      await auditRows(rows(), {
        destinations: [
          records('keyed-api', true, [{ id: 'obj_1', effectId: 'e1', bodySha256: H('a'), idempotencyKey: 'e1' }]),
          destination,
        ],
        workflows,
        requireSettled: true,
      })
    ).findings.map((f) => `${f.kind} ${f.effectId}`);

  test('is the waiting person’s to confirm, not a finding, once as many newer objects as the listing shows exist', async () => {
    assert.deepEqual(await kinds(feed(3)), []);
  });
  test('within sight, an effect waiting for a person beside its object is still a finding', async () => {
    assert.deepEqual(await kinds(feed(2)), ['object_without_fact e2']);
  });
  test('out of sight but not waiting for a person (still moving, or its workflow gone) is a finding', async () => {
    assert.deepEqual(
      await kinds(feed(3), async () => ({ status: 'RUNNING', stage: 'unknown', awaiting: 'readback' })),
      ['lost e2', 'object_without_fact e2'],
    );
  });
});
