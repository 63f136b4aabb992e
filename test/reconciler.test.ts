// The ledger reconciler cannot go blind and does not describe what visibility already shows running
// (docs/reconciler.md). A poison effect (its start always fails) is recorded with why and the pass goes on,
// so the stranded effects behind it are resumed; a pass reads every page of unfinished effects; its counts
// reach the log, the metrics and the scheduled workflow's result; `list` and `decide` tell an operator the
// effect has no workflow; a worker's timer pass stands aside while the schedule's complete and takes over when it
// is paused; what we send Temporal fits its documented limits; and a start the server refuses
// for a limit of its own is isolated too.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { KEYWORD_MAX_CHARACTERS, STATIC_SUMMARY_MAX_JSON_BYTES } from '../client/temporal-limits.js';
import { objectsFor } from '../harness/effect-probes.js';
import { type Stack, startStack } from '../harness/local-stack.js';
import { taskRequest } from '../harness/sample-requests.js';
import { temporalTarget } from '../harness/temporal-target.js';
import {
  moveStage,
  parkWorkflows,
  RETIRED_DESTINATION,
  registerStranded,
  unfinishedRequest,
} from '../harness/unfinished-effects.js';
import { startWorkerProcess } from '../harness/worker-process.js';
import { readStartFailure } from '../ledger/start-failures.js';
import { readEffect } from '../ledger/trail.js';
import { freePort } from '../stack/free-port.js';
import { waitFor } from '../stack/wait-for.js';
import { ensureReconcilerSchedule, LEDGER_RECONCILER_SCHEDULE_ID } from '../workers/ledger-reconciler.js';
import { EFFECT_WORKFLOW_TYPE } from '../workflows/contract.js';
import { LEDGER_RECONCILER_WORKFLOW_TYPE, type ReconcilerPassReport } from '../workflows/ledger-reconciler.js';
import { effectSummaryKey } from '../workflows/search-attributes.js';
import { runCli } from './support/cli.js';
import { isolateEachTest, leftOpenOnPurpose, TEST_TIMEOUT } from './support/isolation.js';

const isRunning = async (stack: Stack, effectId: string) => {
  try {
    return (await stack.env.client.workflow.getHandle(effectId).describe()).status.name === 'RUNNING';
  } catch {
    return false;
  }
};

/**
 * What a test leaves unfinished is taken out of later tests' passes: its workflows stopped and, as the
 * ledger's owner, its effects moved to `abandoned` (an operator has no way to abandon an effect with no run).
 */
async function retire(stack: Stack, effectIds: string[]): Promise<void> {
  for (const id of effectIds) {
    await stack.env.client.workflow
      .getHandle(id)
      .terminate('the test is over')
      .catch(() => {});
  }
  await stack.ledger.sql`DELETE FROM start_failures WHERE effect_id = ANY(${effectIds})`;
  await stack.ledger.sql`UPDATE effects SET stage = 'abandoned' WHERE effect_id = ANY(${effectIds})
                           AND stage NOT IN ('recorded', 'rejected', 'abandoned')`;
}

/** No schedule firing into the next test: it and its pending passes go. */
async function dropSchedule(stack: Stack): Promise<void> {
  await stack.env.client.schedule
    .getHandle(LEDGER_RECONCILER_SCHEDULE_ID)
    .delete()
    .catch(() => {});
  const query = `WorkflowType = '${LEDGER_RECONCILER_WORKFLOW_TYPE}' AND ExecutionStatus = 'Running'`;
  for await (const pass of stack.env.client.workflow.list({ query })) {
    await stack.env.client.workflow
      .getHandle(pass.workflowId, pass.runId)
      .terminate('the test is over')
      .catch(() => {});
  }
}

describe('the ledger reconciler cannot go blind', { timeout: 300_000 }, () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack({ purpose: 'reconciler' });
  });
  after(() => stack?.stop());
  isolateEachTest(() => stack);

  test(
    'a poison effect whose start always fails is reported with why; the stranded effects behind it are resumed and recorded',
    TEST_TIMEOUT,
    async () => {
      // The poison is first by ID and by age: today's pass (oldest first) and ours (by ID) both meet it first.
      const poison = await registerStranded(stack.ledger, unfinishedRequest('task:0-poison'), {
        destination: RETIRED_DESTINATION,
        stage: 'unknown',
        movedSecondsAgo: 3600,
      });
      const stranded = ['task:1-stranded', 'task:2-stranded', 'task:3-stranded'];
      for (const id of stranded) await registerStranded(stack.ledger, unfinishedRequest(id));
      try {
        await ensureReconcilerSchedule(stack.env.client, {
          taskQueue: stack.taskQueue,
          everyMs: 1000,
          olderThanMs: 0,
        });
        await stack.withWorker(() =>
          waitFor(
            async () => {
              for (const id of stranded)
                if ((await readEffect(stack.ledger.db, id))?.stage !== 'recorded') return false;
              return true;
            },
            'every stranded effect behind the poison one resumed by a scheduled pass and recorded',
            90_000,
          ),
        );
        for (const id of stranded) assert.equal((await objectsFor(stack, id)).length, 1, `${id}: one object`);
        // The scheduled passes' results say what they did: the Web UI shows them.
        const reports: ReconcilerPassReport[] = [];
        const query = `WorkflowType = '${LEDGER_RECONCILER_WORKFLOW_TYPE}' AND ExecutionStatus = 'Completed'`;
        for await (const pass of stack.env.client.workflow.list({ query })) {
          reports.push(await stack.env.client.workflow.getHandle(pass.workflowId, pass.runId).result());
        }
        const withPoison = reports.filter((r) => r.failures.some((f) => f.effectId === poison));
        assert.ok(withPoison.length > 0, `a completed pass reports the poison effect: ${JSON.stringify(reports)}`);
        const resumed = new Set(reports.flatMap((r) => r.resumedEffects));
        for (const id of stranded) assert.ok(resumed.has(id), `${id} is among the resumed`);
        const failure = withPoison[0]?.failures.find((f) => f.effectId === poison);
        assert.equal(failure?.stage, 'unknown');
        assert.match(failure?.reason ?? '', new RegExp(`no destination ${RETIRED_DESTINATION}`));
        assert.ok((withPoison[0]?.couldNotStart ?? 0) >= 1);
        // And the ledger keeps it, for `list`, the metrics and `decide`.
        const row = await readStartFailure(stack.ledger.db, poison);
        assert.match(row?.reason ?? '', new RegExp(`no destination ${RETIRED_DESTINATION}`));
        assert.ok((row?.failures ?? 0) >= 1);
        assert.equal(await isRunning(stack, poison), false);
      } finally {
        await dropSchedule(stack);
        await retire(stack, [poison, ...stranded]);
      }
    },
  );

  test(
    "a worker's timer pass stands aside while the schedule's passes complete, and resumes a stranded effect once the schedule is paused",
    TEST_TIMEOUT,
    async () => {
      const ticks = { passed: 0, stoodAside: 0 };
      const observer = {
        passed: () => void ticks.passed++,
        failed: () => {},
        stoodAside: () => void ticks.stoodAside++,
      };
      const stranded = 'task:timer-stranded';
      try {
        await stack.withWorker(
          async () => {
            // The worker made the schedule (every second); its own timer ticks every second too.
            await waitFor(async () => ticks.stoodAside >= 3, 'three timer ticks left to completed scheduled passes');
            assert.ok(ticks.passed >= 3, `the schedule's passes ran (${ticks.passed})`);
            // An operator pauses the schedule; once its last pass has ended, only the timer is left.
            await stack.env.client.schedule.getHandle(LEDGER_RECONCILER_SCHEDULE_ID).pause('test: the backstop');
            const query = `WorkflowType = '${LEDGER_RECONCILER_WORKFLOW_TYPE}' AND ExecutionStatus = 'Running'`;
            await waitFor(
              async () => (await stack.env.client.workflow.count(query)).count === 0,
              'no scheduled pass running',
            );
            await registerStranded(stack.ledger, unfinishedRequest(stranded));
            await waitFor(
              async () => (await readEffect(stack.ledger.db, stranded))?.stage === 'recorded',
              'the stranded effect resumed by the timer pass and recorded',
              60_000,
            );
            assert.equal((await objectsFor(stack, stranded)).length, 1, 'one object');
          },
          { reconciler: { everyMs: 1000, olderThanMs: 0 }, reconcilerObserver: observer },
        );
      } finally {
        await dropSchedule(stack);
        await retire(stack, [stranded]);
      }
    },
  );

  test(
    'more unfinished effects than one page, a stranded one last: every page is read, visibility finds the running ones in bulk, and only the stranded one is described and started',
    TEST_TIMEOUT,
    async () => {
      const parkedQueue = `nobody-polls-${stack.taskQueue}`;
      // Seven effects waiting in UNKNOWN for a day, their workflows running (on a queue nobody polls)…
      const waiting = Array.from({ length: 7 }, (_, i) => `task:page-${i}`);
      for (const id of waiting) await registerStranded(stack.ledger, unfinishedRequest(id));
      await moveStage(stack.ledger.sql, waiting, { stage: 'unknown', movedSecondsAgo: 86_400 });
      await parkWorkflows(stack.env.client, waiting, parkedQueue);
      // …and one stranded just now, last by ID and newest: the one a first-N-oldest list never reaches.
      const stranded = await registerStranded(stack.ledger, unfinishedRequest('task:page-z-stranded'));
      const mine = [...waiting, stranded];
      for (const id of mine) leftOpenOnPurpose.add(id);
      try {
        // Visibility shows a start within moments; the pass would describe (and rightly skip) one it lags on.
        await waitFor(
          async () =>
            (
              await stack.env.client.workflow.count(
                `WorkflowType = '${EFFECT_WORKFLOW_TYPE}' AND ExecutionStatus = 'Running' AND TaskQueue = '${parkedQueue}'`,
              )
            ).count === waiting.length,
          'visibility to show the parked workflows',
        );
        const pages: string[] = [];
        const report = await stack.effects.resumeStranded({
          olderThanMs: 0,
          pageSize: 2,
          onPage: (cursor) => pages.push(cursor.after),
        });
        assert.deepEqual(
          {
            checked: report.checked,
            running: report.running,
            described: report.described,
            resumed: report.resumed,
            couldNotStart: report.couldNotStart,
            pages: report.pages,
          },
          { checked: 8, running: 7, described: 1, resumed: 1, couldNotStart: 0, pages: 4 },
        );
        assert.deepEqual(report.resumedEffects, [stranded]);
        assert.deepEqual(pages, ['task:page-1', 'task:page-3', 'task:page-5', stranded]);
        assert.equal(await isRunning(stack, stranded), true, 'the stranded effect has a running workflow');

        // A pass continued from a cursor (an activity's retry after its worker died) reads only what is left.
        const rest = await stack.effects.resumeStranded({
          olderThanMs: 0,
          pageSize: 2,
          resume: { after: 'task:page-4', began: new Date().toISOString() },
        });
        assert.deepEqual([rest.checked, rest.pages, rest.resumedAfter], [3, 2, 'task:page-4']);
      } finally {
        await retire(stack, mine);
      }
    },
  );

  test(
    "an operator sees the effect the reconciler cannot start: `list` says why, and `decide` says it is stranded instead of Temporal's 'not found'",
    TEST_TIMEOUT,
    async () => {
      const poison = await registerStranded(stack.ledger, unfinishedRequest('task:cli-poison'), {
        destination: RETIRED_DESTINATION,
        stage: 'unknown',
      });
      // Stranded in UNKNOWN (its run terminated, say), before any pass: it looks like one waiting for a person.
      const lost = await registerStranded(stack.ledger, unfinishedRequest('task:cli-lost'), { stage: 'unknown' });
      try {
        const decide = (id: string) =>
          runCli(stack, ['decide', id, 'abandon', '--actor', 'ana@example.com', '--reason', 'gone', '--json']);
        const beforePass = await decide(lost);
        assert.equal(beforePass.code, 5, beforePass.stderr);
        assert.match(
          beforePass.stderr,
          /EffectNotRunningError: effect task:cli-lost is unknown in the ledger but has no running workflow \(stranded\)/,
        );
        assert.match(beforePass.stderr, /the ledger reconciler starts it again within its period/);
        assert.doesNotMatch(beforePass.stderr, /WorkflowNotFoundError|not found/i);

        const report = await stack.effects.resumeStranded({ olderThanMs: 0 });
        assert.deepEqual(
          report.failures.map((f) => f.effectId),
          [poison],
        );
        assert.deepEqual(report.resumedEffects, [lost]);
        leftOpenOnPurpose.add(lost);

        // Three processes at once: none of them changes anything.
        const [listed, unstartable, onPoison] = await Promise.all([
          runCli(stack, ['list', '--stage', 'unknown']),
          runCli(stack, ['list', '--unstartable', '--json']),
          decide(poison),
        ]);
        assert.equal(listed.code, 0, listed.stderr);
        const line = listed.stdout.split('\n').find((l) => l.startsWith(`${poison}\t`));
        assert.match(
          line ?? '',
          new RegExp(
            `NO WORKFLOW: the reconciler could not start it since .* \\(failed starts: 1\\): .*no destination ${RETIRED_DESTINATION}`,
          ),
        );
        const waitingLine = listed.stdout.split('\n').find((l) => l.startsWith(`${lost}\t`));
        assert.doesNotMatch(waitingLine ?? '', /NO WORKFLOW/, 'a resumed effect is not reported as unstartable');

        assert.equal(unstartable.code, 0, unstartable.stderr);
        const rows = JSON.parse(unstartable.stdout) as { effectId: string; stage: string; reason: string }[];
        assert.deepEqual(
          rows.map((r) => [r.effectId, r.stage]),
          [[poison, 'unknown']],
        );

        assert.equal(onPoison.code, 5, onPoison.stderr);
        assert.match(onPoison.stderr, /has no running workflow \(stranded\)/);
        assert.match(
          onPoison.stderr,
          new RegExp(`failed to start it since .* \\(failed starts: 1\\): .*no destination ${RETIRED_DESTINATION}`),
        );
        assert.equal((await readEffect(stack.ledger.db, poison))?.stage, 'unknown', 'nothing changed');
      } finally {
        await retire(stack, [poison, lost]);
      }
    },
  );

  test(
    'each pass reports its counts in a JSON log line and the metrics; the stuck-effect alert fires for an effect that cannot start',
    TEST_TIMEOUT,
    async () => {
      const poison = await registerStranded(stack.ledger, unfinishedRequest('task:obs-poison'), {
        destination: RETIRED_DESTINATION,
        stage: 'unknown',
      });
      const stranded = await registerStranded(stack.ledger, unfinishedRequest('task:obs-stranded'));
      const metricsAddress = `127.0.0.1:${await freePort()}`;
      const worker = await startWorkerProcess(stack, undefined, {
        keepOutput: true,
        env: { EFFECT_LEDGER_METRICS_ADDRESS: metricsAddress, EFFECT_LEDGER_RECONCILE_EVERY_MS: '1000' },
      });
      const scrape = async () => (await fetch(`http://${metricsAddress}/metrics`)).text();
      const sample = (text: string, series: string) => {
        const line = text.split('\n').find((l) => l.startsWith(`${series} `));
        return line === undefined ? undefined : Number(line.slice(series.length + 1));
      };
      try {
        const text = await waitFor(async () => {
          const t = await scrape();
          return (sample(t, 'effect_ledger_reconciler_effects_total{result="resumed"}') ?? 0) >= 1 &&
            (sample(t, 'effect_ledger_reconciler_effects_total{result="could_not_start"}') ?? 0) >= 1
            ? t
            : undefined;
        }, 'the metrics to count a resumed effect and one that could not start');
        assert.ok((sample(text, 'effect_ledger_reconciler_effects_total{result="checked"}') ?? 0) >= 2);
        assert.ok((sample(text, 'effect_ledger_reconciler_passes_total{outcome="completed"}') ?? 0) >= 1);
        assert.equal(sample(text, 'effect_ledger_unstartable_effects'), 1);
        await waitFor(async () => (await readEffect(stack.ledger.db, stranded))?.stage === 'recorded', 'recorded');

        const passes = () =>
          worker
            .output()
            .split('\n')
            .filter((l) => l.includes('"ledger reconciler pass"'))
            .map(
              (l) => JSON.parse(l) as Record<string, unknown> & { failures?: { effectId: string; reason: string }[] },
            );
        // Awaited: a pass counts each effect in the metrics as it goes, and logs its line only once it has ended.
        const reporting = await waitFor(
          async () => passes().find((p) => p.failures?.some((f) => f.effectId === poison)),
          "a pass's log line to name the poison effect",
        );
        assert.equal(reporting.level, 'info');
        assert.equal(typeof reporting.checked, 'number');
        assert.equal(typeof reporting.resumed, 'number');
        assert.ok((reporting.couldNotStart as number) >= 1);
        assert.match(reporting.failures?.[0]?.reason ?? '', /no destination retired-api/);
        await waitFor(
          async () => passes().some((p) => (p.resumedEffects as string[] | undefined)?.includes(stranded)),
          'the log line of the pass that resumed the stranded effect',
        );

        // The poison waits in UNKNOWN, which the stuck-effect alert leaves to the other one; but it has no
        // workflow, so its first failed start counts as unsettled. Twenty minutes later, it fires.
        await stack.ledger.sql`UPDATE start_failures SET first_failed_at = now() - interval '20 minutes'
                                 WHERE effect_id = ${poison}`;
        const later = await scrape();
        assert.ok(
          (sample(later, 'effect_ledger_oldest_unsettled_age_seconds') ?? 0) >= 1200,
          `EffectStuck (> 900 s) fires: ${sample(later, 'effect_ledger_oldest_unsettled_age_seconds')}`,
        );
      } finally {
        await worker.kill();
        await dropSchedule(stack);
        await retire(stack, [poison, stranded]);
      }
    },
  );

  test(
    'what we send Temporal fits its documented limits: a 128-character effect ID and a 200-character CJK summary start, cut where Temporal would refuse them',
    TEST_TIMEOUT,
    async () => {
      const effectId = `task:${'long-id-'.repeat(16)}`.slice(0, 128);
      const title = '預覽準備'.repeat(50);
      await stack.effects.approve({ ...taskRequest(effectId, 'request-long-id'), summary: title });
      leftOpenOnPurpose.add(effectId);
      const description = await stack.env.client.workflow.getHandle(effectId).describe();
      const keyword = String(description.typedSearchAttributes.get(effectSummaryKey));
      assert.ok(keyword.startsWith(`${effectId} · keyed-api task.create · 預覽準備`), keyword);
      assert.ok(
        Array.from(keyword).length <= KEYWORD_MAX_CHARACTERS,
        `EffectSummary: ${Array.from(keyword).length} characters`,
      );
      assert.ok(keyword.endsWith('…'));
      const summary = (await description.staticSummary()) ?? '';
      assert.ok(summary.startsWith(effectId), summary);
      assert.ok(Buffer.byteLength(JSON.stringify(summary)) <= STATIC_SUMMARY_MAX_JSON_BYTES);
      // In SQL visibility (the cluster's PostgreSQL) a Keyword past 255 characters leaves the run out of every
      // list: running, and nowhere in the Web UI. Cut, it is listed.
      await waitFor(
        async () =>
          (await stack.env.client.workflow.count(`WorkflowId = '${effectId}' AND ExecutionStatus = 'Running'`))
            .count === 1,
        'visibility to list the effect',
      );
      // The ledger keeps the whole summary; only what Temporal shows is cut.
      assert.equal((await readEffect(stack.ledger.db, effectId))?.summary, title);
      await retire(stack, [effectId]);
    },
  );
});

// The dev server takes the tighter limit on its command line; the cluster target has no such option here.
const onDevServer = temporalTarget() === 'dev-server';

describe('whatever the cause: a start the server refuses for a limit of its own', {
  timeout: 180_000,
  skip: !onDevServer,
}, () => {
  let stack: Stack;
  before(async () => {
    // A cluster set tighter than Temporal's defaults (2 KB): a search attribute value past 160 bytes is refused.
    stack = await startStack({
      purpose: 'reconciler_limits',
      devServerArgs: ['--dynamic-config-value', 'frontend.searchAttributesSizeOfValueLimit=160'],
    });
  });
  after(() => stack?.stop());
  isolateEachTest(() => stack);

  test(
    "is recorded for that effect with the server's words, and the pass goes on to the stranded effects behind it",
    TEST_TIMEOUT,
    async () => {
      const poison = await registerStranded(
        stack.ledger,
        { ...unfinishedRequest('task:a-too-wide'), summary: 'A title this cluster finds too long '.repeat(4) },
        { movedSecondsAgo: 3600 },
      );
      const stranded = ['task:b-stranded', 'task:c-stranded'];
      for (const id of stranded) await registerStranded(stack.ledger, unfinishedRequest(id));
      for (const id of stranded) leftOpenOnPurpose.add(id);
      const report = await stack.effects.resumeStranded({ olderThanMs: 0, pageSize: 2 });
      assert.deepEqual(report.resumedEffects, stranded);
      assert.deepEqual(
        report.failures.map((f) => [f.effectId, f.stage]),
        [[poison, 'released']],
      );
      assert.match(
        report.failures[0]?.reason ?? '',
        /INVALID_ARGUMENT: search attribute EffectSummary value size \d+ exceeds size limit 160/,
      );
      for (const id of stranded) assert.equal(await isRunning(stack, id), true);
      // Every pass tries again and counts it; a pass that gets through leaves only current failures.
      await stack.effects.resumeStranded({ olderThanMs: 0, pageSize: 2 });
      assert.equal((await readStartFailure(stack.ledger.db, poison))?.failures, 2);
    },
  );
});
