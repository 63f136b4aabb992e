// The chaos checker's revision rule on hand-made histories: a revision answered "created" must have had a run
// carrying it by then, or one handed over from a run open at the answer — also when a reset replaced that run
// (fresh seed 1212000011: a reset 0.2 s after the revision; the reset run handed over 1.7 s later). A revision
// whose first run started fresh after the answer (the reconciler's) is still a violation.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { defaultPayloadConverter } from '@temporalio/common';
import { acceptedUpdates, type RunHistory, revisionRunChecks } from '../scripts/chaos/decision-checks.js';

const answeredAt = new Date('2026-12-01T16:36:07.000Z');
const at = (s: number) => new Date(answeredAt.getTime() + s * 1000);

function run(
  runId: string,
  startedAt: Date,
  revision: number,
  links: { continuedFrom?: string; resetFrom?: string } = {},
): RunHistory {
  return {
    runId,
    startedAt,
    events: [
      {
        workflowExecutionStartedEventAttributes: {
          input: { payloads: [defaultPayloadConverter.toPayload({ releaseRevision: revision })] },
          ...(links.continuedFrom ? { continuedExecutionRunId: links.continuedFrom } : {}),
        },
      },
      ...(links.resetFrom
        ? [{ workflowTaskFailedEventAttributes: { baseRunId: links.resetFrom, newRunId: runId } }]
        : []),
    ],
  } as RunHistory;
}

describe('the chaos checker: a revision has a run carrying it', () => {
  test('handed over by the run open at the answer: no violation', () => {
    const histories = [run('r1', at(-5), 1), run('r2', at(1), 2, { continuedFrom: 'r1' })];
    assert.deepEqual(revisionRunChecks({ 2: answeredAt }, 'e', histories), []);
  });

  test('handed over by the reset of the run open at the answer: no violation', () => {
    const histories = [
      run('r1', at(-5), 1),
      run('r1-reset', at(0.2), 1, { resetFrom: 'r1' }),
      run('r2', at(1.7), 2, { continuedFrom: 'r1-reset' }),
    ];
    assert.deepEqual(revisionRunChecks({ 2: answeredAt }, 'e', histories), []);
  });

  test('a fresh run started after the answer (the reconciler): a violation', () => {
    const histories = [run('r1', at(-5), 1), run('r2', at(3), 2)];
    assert.deepEqual(
      revisionRunChecks({ 2: answeredAt }, 'e', histories).map((v) => v.kind),
      ['revision_without_run'],
    );
  });

  test('continued from a run that itself started after the answer, with no reset behind it: a violation', () => {
    const histories = [run('r1', at(-5), 1), run('late', at(2), 1), run('r2', at(3), 2, { continuedFrom: 'late' })];
    assert.deepEqual(
      revisionRunChecks({ 2: answeredAt }, 'e', histories).map((v) => v.kind),
      ['revision_without_run'],
    );
  });
});

describe('the chaos checker: an update accepted by more than one run', () => {
  const completed = (updateId: string, answer: object) => ({
    workflowExecutionUpdateCompletedEventAttributes: {
      meta: { updateId },
      outcome: { success: { payloads: [defaultPayloadConverter.toPayload(answer)] } },
    },
  });
  const history = (runId: string, events: object[]) => ({ runId, startedAt: at(0), events }) as RunHistory;

  test("a reset run's copy of the replaced run's acceptance is not a second one (seed 1212000007)", () => {
    const accepted = completed('u1', { accepted: true, stage: 'unknown' });
    const histories = [
      history('r1', [{}, accepted]),
      history('r1-reset', [
        {},
        accepted,
        { workflowTaskFailedEventAttributes: { baseRunId: 'r1', newRunId: 'r1-reset' } },
      ]),
    ];
    assert.deepEqual([...acceptedUpdates(histories)], [['u1', ['r1']]]);
  });

  test('the same update accepted again after the reset point, or by a continued run, counts twice', () => {
    const accepted = completed('u1', { accepted: true, stage: 'unknown' });
    const reset = { workflowTaskFailedEventAttributes: { baseRunId: 'r1', newRunId: 'r1-reset' } };
    assert.deepEqual(
      [...acceptedUpdates([history('r1', [{}, accepted]), history('r1-reset', [{}, reset, accepted])])],
      [['u1', ['r1', 'r1-reset']]],
    );
    assert.deepEqual(
      [...acceptedUpdates([history('r1', [{}, accepted]), history('r2', [{}, accepted])])],
      [['u1', ['r1', 'r2']]],
    );
  });

  test('an answer marked repeated (the ledger already held the decision) is not an acceptance', () => {
    const histories = [
      history('r1', [{}, completed('u1', { accepted: true })]),
      history('r2', [{}, completed('u1', { accepted: true, repeated: true })]),
    ];
    assert.deepEqual([...acceptedUpdates(histories)], [['u1', ['r1']]]);
  });
});
