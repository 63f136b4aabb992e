// The ledger's runtime role (migration 0007): the worker and backend code run the whole path under it —
// approval, attempt, answer, readback, a person's decision — and it cannot rewrite or erase a record,
// nor change the schema. Destination credentials come from the worker's environment or a file and show
// nowhere: not in the worker's log, not in a workflow history, not in the ledger.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import postgres from 'postgres';
import { EffectLedgerClient } from '../client/effect-ledger-client.js';
import { resultOf, waitForStage } from '../harness/effect-probes.js';
import { type Stack, startStack } from '../harness/local-stack.js';
import { postRequest, taskRequest } from '../harness/sample-requests.js';
import { startWorkerProcess, type WorkerProcess } from '../harness/worker-process.js';
import { type Ledger, openLedger } from '../ledger/db.js';
import { TEST_TIMEOUT } from './support/isolation.js';

const KEYED_SECRET = `keyed_cred_${randomBytes(6).toString('hex')}`;
const SOCIAL_SECRET = `social_cred_${randomBytes(6).toString('hex')}`;

/** Forwards to the provider and remembers the Authorization header of every request. */
async function recordingProxy(
  target: string,
): Promise<{ url: string; seen: Array<{ path: string; auth?: string }>; server: Server }> {
  const seen: Array<{ path: string; auth?: string }> = [];
  const server = createServer((req, res) => {
    seen.push({ path: req.url ?? '', auth: req.headers.authorization });
    const upstream = httpRequest(
      new URL(req.url ?? '/', target),
      { method: req.method, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy()); // a cut connection stays a cut connection
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, server };
}

/** The SQLSTATE a statement fails with ('ok' when it does not fail). */
async function sqlState(run: () => Promise<unknown>): Promise<string> {
  try {
    await run();
    return 'ok';
  } catch (error) {
    return String((error as { code?: unknown }).code);
  }
}

describe('least privilege for the ledger', { timeout: 300_000 }, () => {
  let stack: Stack;
  let owner: postgres.Sql;
  let runtime: Ledger;
  let worker: WorkerProcess;
  let proxy: Awaited<ReturnType<typeof recordingProxy>>;
  const role = `effect_ledger_test_${randomBytes(4).toString('hex')}`;

  before(async () => {
    stack = await startStack({ purpose: 'privilege' });
    owner = postgres(stack.databaseUrl, { max: 1, onnotice: () => {} });
    await owner.unsafe(`CREATE ROLE ${role} LOGIN IN ROLE effect_ledger_runtime`);
    const runtimeUrl = new URL(stack.databaseUrl);
    runtimeUrl.username = role;
    runtime = openLedger(runtimeUrl.toString(), { max: 2 });
    const dir = mkdtempSync(join(tmpdir(), 'credentials-'));
    writeFileSync(join(dir, 'keyed-api'), `${KEYED_SECRET}\n`);
    proxy = await recordingProxy(stack.simulator.url);
    worker = await startWorkerProcess(stack, proxy.url, {
      keepOutput: true,
      env: {
        DATABASE_URL: runtimeUrl.toString(),
        EFFECT_LEDGER_CREDENTIAL_KEYED_API_FILE: join(dir, 'keyed-api'),
        EFFECT_LEDGER_CREDENTIAL_SOCIAL_FEED: SOCIAL_SECRET,
      },
    });
  });
  after(async () => {
    await worker?.kill();
    proxy?.server.close();
    await runtime?.close();
    await owner?.end();
    await stack?.stop();
    const admin = postgres('postgres://postgres@127.0.0.1:5432/postgres', { max: 1, onnotice: () => {} });
    await admin.unsafe(`DROP ROLE IF EXISTS ${role}`).finally(() => admin.end());
  });

  test(
    'the whole path runs as the runtime role, with credentials from env and file that show nowhere',
    TEST_TIMEOUT,
    async () => {
      const effects = new EffectLedgerClient({
        client: stack.env.client,
        db: runtime.db,
        taskQueue: stack.taskQueue,
        absenceGraceMs: 0,
        readbackMaxIntervalMs: 5000,
        callTimeoutMs: 2000,
      });
      await effects.approve(taskRequest('task:least-1', 'request-least'));
      assert.equal((await resultOf(stack, 'task:least-1')).stage, 'recorded');
      await stack.simulator.fault('fail_before_commit', { path: '/social/v1/posts' });
      await effects.approve(postRequest('post:least-2', 'lost on the way'));
      await waitForStage(stack, 'post:least-2', 'unknown', 'a human decision');
      const decided = await effects.decide('post:least-2', 'abandon', { actor: 'ops@example.com', reason: 'test' });
      assert.equal(decided.accepted, true);
      assert.equal((await resultOf(stack, 'post:least-2')).stage, 'abandoned');
      const trail = await effects.status('task:least-1');
      assert.equal(trail.trail.attempts.length, 1);

      // Every request carried its destination's credential.
      const keyed = proxy.seen.filter((r) => r.path.startsWith('/v1/'));
      const social = proxy.seen.filter((r) => r.path.startsWith('/social/'));
      assert.ok(keyed.length >= 1 && social.length >= 2, JSON.stringify(proxy.seen));
      assert.deepEqual(new Set(keyed.map((r) => r.auth)), new Set([`Bearer ${KEYED_SECRET}`]));
      assert.deepEqual(new Set(social.map((r) => r.auth)), new Set([`Bearer ${SOCIAL_SECRET}`]));

      // …and appears nowhere we keep anything.
      const histories = await Promise.all(
        ['task:least-1', 'post:least-2'].map((id) => stack.env.client.workflow.getHandle(id).fetchHistory()),
      );
      const ledgerText = JSON.stringify(
        await owner`SELECT (SELECT json_agg(a) FROM attempts a) AS a, (SELECT json_agg(e) FROM provider_evidence e) AS e,
                         (SELECT json_agg(d) FROM decisions d) AS d, (SELECT json_agg(r) FROM releases r) AS r`,
      );
      for (const [where, text] of [
        ['the worker log', worker.output()],
        ['a workflow history', JSON.stringify(histories)],
        ['the ledger', ledgerText],
      ] as const) {
        assert.ok(!text.includes(KEYED_SECRET) && !text.includes(SOCIAL_SECRET), `a credential is in ${where}`);
      }
    },
  );

  test('the runtime role cannot update, delete or truncate a record, nor change the schema', TEST_TIMEOUT, async () => {
    const sql = runtime.sql;
    const [attempt] = await sql`SELECT attempt_id FROM attempts LIMIT 1`;
    assert.ok(attempt, 'the previous test left an attempt row');
    const rows = () => sql`SELECT (SELECT count(*) FROM attempts) + (SELECT count(*) FROM provider_evidence)
      + (SELECT count(*) FROM facts) + (SELECT count(*) FROM decisions) + (SELECT count(*) FROM effects) AS n`;
    const [before] = await rows();
    const refused: Record<string, string> = {};
    const tries: Record<string, () => Promise<unknown>> = {
      'UPDATE attempts': () => sql`UPDATE attempts SET idempotency_key = 'x' WHERE attempt_id = ${attempt.attempt_id}`,
      'DELETE attempts': () => sql`DELETE FROM attempts WHERE attempt_id = ${attempt.attempt_id}`,
      'UPDATE provider_evidence': () => sql`UPDATE provider_evidence SET outcome = 'confirmed'`,
      'DELETE provider_evidence': () => sql`DELETE FROM provider_evidence`,
      'UPDATE facts': () => sql`UPDATE facts SET external_id = 'forged'`,
      'DELETE facts': () => sql`DELETE FROM facts`,
      'UPDATE decisions': () => sql`UPDATE decisions SET accepted = false`,
      'DELETE decisions': () => sql`DELETE FROM decisions`,
      'UPDATE releases': () => sql`UPDATE releases SET target = 'elsewhere'`,
      'UPDATE revisions': () => sql`UPDATE revisions SET reason = 'rewritten'`,
      'DELETE revisions': () => sql`DELETE FROM revisions`,
      'DELETE effects': () => sql`DELETE FROM effects`,
      'UPDATE effects.payload': () => sql`UPDATE effects SET payload = '{}'::jsonb`,
      ...Object.fromEntries(
        ['attempts', 'provider_evidence', 'facts', 'decisions', 'releases', 'revisions', 'effects'].map((t) => [
          `TRUNCATE ${t}`,
          () => sql.unsafe(`TRUNCATE ${t} CASCADE`),
        ]),
      ),
      'CREATE TABLE': () => sql`CREATE TABLE sneaky (id int)`,
      'ALTER TABLE': () => sql`ALTER TABLE attempts DISABLE TRIGGER attempts_append_only`,
      'DROP TABLE': () => sql`DROP TABLE decisions`,
    };
    for (const [what, run] of Object.entries(tries)) refused[what] = await sqlState(run);
    // 42501 insufficient_privilege everywhere (ALTER/DROP: "must be owner", the same code).
    assert.deepEqual(refused, Object.fromEntries(Object.keys(tries).map((k) => [k, '42501'])));
    const [afterwards] = await rows();
    assert.equal(afterwards?.n, before?.n, 'every record is still there');
    // The guard bites: the owner — what the app connected as before — walks past the triggers with TRUNCATE.
    assert.equal(await sqlState(() => owner`TRUNCATE decisions`), 'ok');
  });
});
