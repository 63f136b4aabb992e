// The stage machine against the README's stage diagram: every allowed move, and a sample of forbidden ones.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { EFFECT_ID_PATTERN } from '../domain/effect-id.js';
import { idempotencyKeyFor, MAIN_STEP, STEP_SEPARATOR, STEP_SOURCE } from '../domain/idempotency-key.js';
import {
  canMove,
  EFFECT_STAGES,
  IllegalStageTransitionError,
  isTerminal,
  nextStage,
  stageAfterOutcome,
  TRANSITIONS,
} from '../domain/stages.js';
import { EffectView } from '../workflows/effect-view.js';

const allowed: Array<[string, string]> = [
  ['prepared', 'released'],
  ['prepared', 'recorded'],
  ['prepared', 'abandoned'],
  ['released', 'attempted'],
  ['released', 'abandoned'],
  ['attempted', 'recorded'],
  ['attempted', 'rejected'],
  ['attempted', 'unknown'],
  ['attempted', 'abandoned'],
  ['unknown', 'reconciled'],
  ['unknown', 'attempted'],
  ['unknown', 'recorded'],
  ['unknown', 'abandoned'],
  ['reconciled', 'recorded'],
  ['reconciled', 'attempted'],
];

describe('stage machine', () => {
  test('allows exactly the moves of the design', () => {
    const every = EFFECT_STAGES.flatMap((from) => EFFECT_STAGES.map((to) => [from, to] as const));
    for (const [from, to] of every) {
      const expected = allowed.some(([f, t]) => f === from && t === to);
      assert.equal(canMove(from, to), expected, `${from} → ${to}`);
    }
  });

  test('forbidden moves throw a typed error', () => {
    for (const [from, to] of [
      ['prepared', 'attempted'], // nothing leaves without a release
      ['attempted', 'attempted'], // a retry is a new attempt row, not a move
      ['unknown', 'rejected'], // a refusal can only come as an answer to an attempt
      ['recorded', 'attempted'], // terminal
      ['rejected', 'attempted'],
      ['abandoned', 'recorded'],
      // Found means that step is done: it is never written again (the ledger refuses an attempt of a step
      // that has its fact); only a multi-step effect's next step moves reconciled → attempted.
      ['reconciled', 'unknown'],
    ] as const) {
      assert.throws(
        () => nextStage(from, to),
        (e) => e instanceof IllegalStageTransitionError && e.from === from && e.to === to,
      );
    }
  });

  test('terminal stages have no way out', () => {
    for (const stage of EFFECT_STAGES) assert.equal(isTerminal(stage), TRANSITIONS[stage].length === 0, stage);
  });

  test('provider outcomes lead where the stage diagram says', () => {
    assert.equal(stageAfterOutcome('confirmed'), 'recorded');
    assert.equal(stageAfterOutcome('rejected'), 'rejected');
    assert.equal(stageAfterOutcome('unknown'), 'unknown');
    assert.equal(stageAfterOutcome('not_sent'), 'attempted');
  });

  test('the view refuses an illegal move and keeps its stage', () => {
    const view = new EffectView({
      effectId: 'e-1',
      destination: 'keyed-api',
      operation: 'task.create',
      summary: 's',
      callTimeoutMs: 1000,
      retryAfterProvenAbsence: true,
      readbackIntervalMs: 60_000,
    });
    assert.throws(() => view.move('attempted'), IllegalStageTransitionError);
    assert.equal(view.stage, 'prepared');
    view.move('released');
    view.addAttempt({ attemptNumber: 1, idempotencyKey: 'e-1', startedAt: '2026-01-01T00:00:00Z' });
    view.move('attempted');
    assert.equal(view.status().attempts[0]!.outcome, 'in_flight');
    assert.match(view.details(), /\| 1 \| `e-1` \|/);
  });

  test('a view carried to the next run (continue-as-new) starts in unknown with the attempts, the latest readbacks and decisions', () => {
    const input = {
      effectId: 'e-2',
      destination: 'social-feed',
      operation: 'post.publish',
      summary: 's',
      callTimeoutMs: 1000,
      retryAfterProvenAbsence: false,
      readbackIntervalMs: 60_000,
    };
    const first = new EffectView(input);
    first.move('released');
    first.addAttempt({ attemptNumber: 1, idempotencyKey: 'e-2', startedAt: '2026-01-01T00:00:00Z' });
    first.move('attempted');
    first.settleAttempt(1, 'unknown', 'timed out');
    first.move('unknown');
    for (let i = 0; i < 30; i++)
      first.addReadback({
        at: `t${i}`,
        outcome: 'absent',
        coverage: 'complete',
        method: 'listing_scan',
        reason: 'not there',
      });
    for (let i = 0; i < 25; i++)
      first.addDecision({ kind: 'abandon', actor: '', accepted: false, note: `garbage ${i}` });
    const carried = first.carry(2);
    assert.deepEqual(
      [carried.readbacks.length, carried.readbacks.at(-1)?.at, carried.decisions.length, carried.decisions[0]?.note],
      [5, 't29', 20, 'garbage 5'],
    );
    assert.deepEqual([carried.automaticRetries, carried.runsBefore], [2, 1]);

    const next = new EffectView({ ...input, carried });
    assert.equal(next.stage, 'unknown');
    assert.deepEqual(next.status().attempts, first.status().attempts);
    assert.match(next.details(), /Run 2 of this effect/);
    assert.throws(() => next.move('released'), IllegalStageTransitionError);
    next.move('abandoned');
    assert.equal(next.carry(2).runsBefore, 2);
  });
});

describe('idempotency key', () => {
  test('is the effect ID, plus the step for multi-step effects, and nothing else', () => {
    assert.equal(idempotencyKeyFor('refund:A-1'), 'refund:A-1');
    assert.equal(idempotencyKeyFor('refund:A-1', 'main'), 'refund:A-1');
    assert.equal(idempotencyKeyFor('onboard:42', 'email'), 'onboard:42~email');
  });

  test('step keys cannot collide: effect A with step x and effect A:x get different keys', () => {
    assert.notEqual(idempotencyKeyFor('A', 'x'), idempotencyKeyFor('A:x'));
    assert.notEqual(idempotencyKeyFor('A', 'x'), idempotencyKeyFor('A:x', MAIN_STEP));
    // The separator is outside the effect ID's and the step's characters: a key splits one way only.
    assert.equal(EFFECT_ID_PATTERN.test(`A${STEP_SEPARATOR}x`), false);
    assert.equal(new RegExp(STEP_SOURCE).test(`x${STEP_SEPARATOR}y`), false);
    const pairs: Array<[string, string]> = [
      ['A', 'x'],
      ['A:x', MAIN_STEP],
      ['A:x', 'y'],
      ['A/x', MAIN_STEP],
      ['A', 'main'],
    ];
    const keys = pairs.map(([id, step]) => idempotencyKeyFor(id, step));
    assert.equal(new Set(keys).size, keys.length, keys.join(' '));
  });
});
