// On the cluster (Temporal persisted in PostgreSQL) with three worker processes: effects are approved, one
// worker is SIGKILLed while calls are held open at the provider, then the Temporal server process itself is
// SIGKILLed and started again on the same databases. Nothing is lost and nothing happens twice: every effect
// ends recorded with exactly one object at the provider (its request log, not our ledger, says so), one
// fact, and every request under the effect's own key.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { assertProviderSaw, providerPostsFor } from '../../harness/effect-probes.js';
import { type Stack, startStack } from '../../harness/local-stack.js';
import { taskRequest } from '../../harness/sample-requests.js';
import { clusterOf, TEMPORAL_TARGET_ENV } from '../../harness/temporal-target.js';
import { startWorkerProcess, type WorkerProcess } from '../../harness/worker-process.js';
import { waitFor } from '../../stack/wait-for.js';

process.env[TEMPORAL_TARGET_ENV] = 'cluster';
const log = (line: string) => process.stdout.write(`# ${line}\n`);
const EFFECTS = 30;

describe('a cluster with three workers: a worker and then the Temporal server killed mid-run', () => {
  let stack: Stack;
  const workers: WorkerProcess[] = [];
  before(async () => {
    stack = await startStack({ callTimeoutMs: 3000, purpose: 'crash' });
    for (let n = 0; n < 3; n++) {
      workers.push(
        await startWorkerProcess(stack, stack.simulator.url, { env: { EFFECT_LEDGER_RECONCILE_EVERY_MS: '3000' } }),
      );
    }
  });
  after(async () => {
    await Promise.allSettled(workers.map((w) => w.kill()));
    await stack?.stop();
  });

  const stages = async () =>
    Object.fromEntries(
      (
        await stack.ledger.sql<{ stage: string; n: number }[]>`
          SELECT stage, count(*)::int AS n FROM effects GROUP BY stage ORDER BY stage`
      ).map((r) => [r.stage, r.n]),
    );
  const posts = async () => (await stack.simulator.requests({ method: 'POST', path: '/v1/objects' })).length;
  /** Calls held open at the provider at each kill (request seqs), to say afterwards what became of them. */
  const openAt = new Map<string, number[]>();
  /** What the moment looks like: stages, requests so far, and calls held open at the provider right now. */
  const snapshot = async (moment: string) => {
    const sent = await stack.simulator.requests({ method: 'POST', path: '/v1/objects' });
    const open = sent.filter((r) => r.fate === 'pending');
    openAt.set(
      moment,
      open.map((r) => r.seq),
    );
    return `stages ${JSON.stringify(await stages())}, ${sent.length} POSTs, ${open.length} calls open at the provider`;
  };
  /** What became of the calls open at a kill: how the provider's answer fared, and how each effect was confirmed. */
  const fateOf = async (moment: string) => {
    const bySeq = new Map((await stack.simulator.requests({ method: 'POST' })).map((r) => [r.seq, r]));
    const confirmedBy = new Map(
      (
        await stack.ledger.sql<{ effectId: string; by: string }[]>`
        SELECT effect_id AS "effectId", confirmed_by AS by FROM facts`
      ).map((f) => [f.effectId, f.by]),
    );
    const tally: Record<string, number> = {};
    for (const seq of openAt.get(moment) ?? []) {
      const request = bySeq.get(seq);
      const key = `${request?.fate} → confirmed by ${confirmedBy.get(request?.effectId ?? '') ?? '?'}`;
      tally[key] = (tally[key] ?? 0) + 1;
    }
    return JSON.stringify(tally);
  };

  test(`${EFFECTS} effects: kill a worker, then the server → each recorded once`, { timeout: 420_000 }, async () => {
    const cluster = clusterOf(stack.env);
    assert.ok(cluster, 'the stack stands on a cluster');
    // Answers held 2 s at the provider (under the 3 s call timeout): calls are open when the kills land.
    await stack.simulator.fault('delay_after_commit', { path: '/v1/objects', delayMs: 2000, count: 12 });
    const ids = Array.from({ length: EFFECTS }, (_, n) => `task:crash-${n}`);
    const started = Date.now();
    const approving = (async () => {
      for (const [n, id] of ids.entries()) await stack.effects.approve(taskRequest(id, `request-crash-${n}`));
    })();

    await waitFor(async () => (await posts()) >= 6, 'six requests at the provider', 60_000);
    log(`worker kill at ${Date.now() - started} ms: ${await snapshot('worker kill')}`);
    await workers[0]!.kill();

    await waitFor(async () => (await posts()) >= 14, 'fourteen requests at the provider', 90_000);
    log(`server kill at ${Date.now() - started} ms: ${await snapshot('server kill')}`);
    await cluster.killServer();
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const restart = Date.now();
    await cluster.startServer();
    log(`server back after ${Date.now() - restart} ms (down 3 s before)`);
    await approving;

    await waitFor(async () => ((await stages()).recorded ?? 0) === EFFECTS, `all ${EFFECTS} effects recorded`, 240_000);
    log(`all recorded at ${Date.now() - started} ms`);
    log(`calls open at the worker kill: ${await fateOf('worker kill')}`);
    log(`calls open at the server kill: ${await fateOf('server kill')}`);

    const objects = await stack.simulator.objects();
    const perEffect = new Map<string, number>();
    for (const o of objects)
      perEffect.set(o.metadata.effect_id ?? '?', (perEffect.get(o.metadata.effect_id ?? '?') ?? 0) + 1);
    assert.equal(objects.length, EFFECTS, `objects at the provider: ${JSON.stringify([...perEffect])}`);
    for (const id of ids) assert.equal(perEffect.get(id), 1, `${id}: one object`);

    // Per effect, from the provider's request log: every request carried the effect's key and the released
    // body, each after its attempt row. More than one request means a same-key retry the provider replayed.
    let replays = 0;
    let multi = 0;
    let unanswered = 0;
    for (const id of ids) {
      const sent = await providerPostsFor(stack, id);
      await assertProviderSaw(stack, id, { posts: sent.length });
      if (sent.length > 1) multi++;
      replays += sent.filter((p) => p.replayed).length;
      unanswered += sent.filter((p) => p.fate !== 'answered').length;
    }
    const [facts] = await stack.ledger.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM facts`;
    assert.equal(facts?.n, EFFECTS, 'one fact per effect');
    const outcomes = await stack.ledger.sql<{ outcome: string; kind: string; n: number }[]>`
      SELECT kind, outcome, count(*)::int AS n FROM provider_evidence GROUP BY kind, outcome ORDER BY kind, outcome`;
    const [attempts] = await stack.ledger.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM attempts`;
    log(
      `${await posts()} POSTs for ${EFFECTS} effects (${multi} effects sent more than once under their key, ${replays} answered as replays, ${unanswered} whose answer never reached a worker); ` +
        `${attempts?.n} attempt rows; evidence ${JSON.stringify(outcomes)}`,
    );
  });
});
