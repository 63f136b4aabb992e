// The database, not our code, refuses what would break the ledger's invariants.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql as drizzleSql } from 'drizzle-orm';
import postgres from 'postgres';
import { openLedger } from '../ledger/db.js';
import { LedgerInvariantError } from '../ledger/errors.js';
import { migrateLedger } from '../ledger/migrate.js';
import { recordAttempt, recordDecision, recordEvidence, releaseEffect } from '../ledger/progress.js';
import { recordStartFailure } from '../ledger/start-failures.js';
import { readEffect } from '../ledger/trail.js';

const adminUrl = process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const sha = (c: string) => c.repeat(64);

describe('ledger invariants (enforced by PostgreSQL)', () => {
  const dbName = `effect_ledger_test_${randomBytes(5).toString('hex')}`;
  let sql: postgres.Sql;
  let url: string;

  before(async () => {
    const u = new URL(adminUrl);
    u.pathname = `/${dbName}`;
    url = u.toString();
    await migrateLedger(url);
    await migrateLedger(url); // applying twice is a no-op
    sql = postgres(url, { max: 1, onnotice: () => {} });
    await sql`INSERT INTO effects (effect_id, destination, operation, fingerprint, payload, approved_by, authorization_ref, summary, mechanism)
              VALUES ('e-1', 'keyed-api', 'task.create', ${sha('a')}, '{}', 'ana', 'T-1', 'task', 'idempotency_key')`;
    await sql`INSERT INTO releases (effect_id, revision, destination, operation, target, package, body_sha256, released_by) VALUES ('e-1', 1, 'keyed-api', 'task.create', 'POST /v1/objects', '{}', ${sha('b')}, 'ana')`;
    await sql`INSERT INTO attempts (effect_id, step, attempt_number, idempotency_key, release_revision, workflow_run_id) VALUES ('e-1', 'main', 1, 'e-1', 1, 'run-1')`;
  });
  after(async () => {
    await sql?.end();
    const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
    await admin.unsafe(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`).finally(() => admin.end());
  });

  const refuses = (name: string, statement: () => Promise<unknown>, pattern: RegExp) =>
    test(name, async () => {
      await assert.rejects(statement(), pattern);
    });

  refuses(
    'a second effect with the same ID',
    () =>
      sql`INSERT INTO effects (effect_id, destination, operation, fingerprint, payload, approved_by, authorization_ref, summary, mechanism) VALUES ('e-1', 'keyed-api', 'task.create', ${sha('c')}, '{}', 'bob', 'T-2', 'task', 'none')`,
    /effects_pkey/,
  );
  refuses(
    'an effect ID that is empty or malformed',
    () =>
      sql`INSERT INTO effects (effect_id, destination, operation, fingerprint, payload, approved_by, authorization_ref, summary, mechanism) VALUES (' x', 'keyed-api', 'task.create', ${sha('c')}, '{}', 'bob', 'T-2', 'task', 'none')`,
    /effect_id_format/,
  );
  refuses(
    'changing what was approved',
    () => sql`UPDATE effects SET fingerprint = ${sha('d')} WHERE effect_id = 'e-1'`,
    /immutable except for its stage/,
  );
  refuses('deleting an effect', () => sql`DELETE FROM effects WHERE effect_id = 'e-1'`, /never deleted/);
  refuses(
    'editing a release',
    () => sql`UPDATE releases SET body_sha256 = ${sha('e')} WHERE effect_id = 'e-1'`,
    /append-only/,
  );
  refuses(
    'a second release with the same revision',
    () =>
      sql`INSERT INTO releases (effect_id, revision, destination, operation, target, package, body_sha256, released_by) VALUES ('e-1', 1, 'keyed-api', 'task.create', 't', '{}', ${sha('f')}, 'ana')`,
    /releases_effect_revision_step_uq/,
  );
  refuses(
    'rewriting an attempt',
    () => sql`UPDATE attempts SET idempotency_key = 'e-1' WHERE effect_id = 'e-1'`,
    /append-only/,
  );
  refuses('deleting an attempt', () => sql`DELETE FROM attempts`, /append-only/);
  // Verdicts crossing into the ledger (issue 26): absent over partial coverage is no absence; found names its object.
  refuses(
    'a readback recorded absent over partial coverage',
    () =>
      sql`INSERT INTO provider_evidence (effect_id, kind, outcome, coverage, detail) VALUES ('e-1', 'readback', 'absent', 'partial', '{}')`,
    /absent_is_complete/,
  );
  refuses(
    'a readback recorded absent with no coverage',
    () =>
      sql`INSERT INTO provider_evidence (effect_id, kind, outcome, detail) VALUES ('e-1', 'readback', 'absent', '{}')`,
    /absent_is_complete/,
  );
  refuses(
    'a readback recorded found with an empty object ID',
    () =>
      sql`INSERT INTO provider_evidence (effect_id, kind, outcome, coverage, external_id, detail) VALUES ('e-1', 'readback', 'found', 'complete', '', '{}')`,
    /found_names_object/,
  );
  refuses(
    'an attempt whose key is not effect-scoped',
    () =>
      sql`INSERT INTO attempts (effect_id, step, attempt_number, idempotency_key, release_revision, workflow_run_id) VALUES ('e-1', 'main', 2, 'e-1:run-2', 1, 'run-2')`,
    /key_is_effect_scoped/,
  );
  refuses(
    'a duplicate attempt number',
    () =>
      sql`INSERT INTO attempts (effect_id, step, attempt_number, idempotency_key, release_revision, workflow_run_id) VALUES ('e-1', 'main', 1, 'e-1', 1, 'run-2')`,
    /attempts_effect_step_revision_number_uq/,
  );

  test('one fact per effect, one effect per external object, facts immutable, terminal stage final', async () => {
    const [evidence] =
      await sql`INSERT INTO provider_evidence (effect_id, attempt_id, kind, outcome, detail) SELECT 'e-1', attempt_id, 'response', 'confirmed', '{}' FROM attempts RETURNING evidence_id`;
    await assert.rejects(
      sql`INSERT INTO provider_evidence (effect_id, attempt_id, kind, outcome, detail) SELECT 'e-1', attempt_id, 'response', 'unknown', '{}' FROM attempts`,
      /evidence_one_response_per_attempt_uq/,
    );
    await sql`INSERT INTO facts (effect_id, destination, external_id, occurred_at, confirmed_by, evidence_id) VALUES ('e-1', 'keyed-api', 'obj_1', now(), 'provider_response', ${evidence!.evidence_id})`;
    await assert.rejects(
      sql`INSERT INTO facts (effect_id, destination, external_id, occurred_at, confirmed_by, evidence_id) VALUES ('e-1', 'keyed-api', 'obj_2', now(), 'readback', ${evidence!.evidence_id})`,
      /facts_effect_step_pk/,
    );
    await assert.rejects(sql`UPDATE facts SET external_id = 'obj_3'`, /append-only/);
    await sql`INSERT INTO effects (effect_id, destination, operation, fingerprint, payload, approved_by, authorization_ref, summary, mechanism) VALUES ('e-2', 'keyed-api', 'task.create', ${sha('9')}, '{}', 'ana', 'T-3', 'task', 'idempotency_key')`;
    await sql`INSERT INTO releases (effect_id, revision, destination, operation, target, package, body_sha256, released_by) VALUES ('e-2', 1, 'keyed-api', 'task.create', 'POST /v1/objects', '{}', ${sha('b')}, 'ana')`;
    await assert.rejects(
      sql`INSERT INTO facts (effect_id, destination, external_id, occurred_at, confirmed_by, evidence_id) VALUES ('e-2', 'keyed-api', 'obj_1', now(), 'human', ${evidence!.evidence_id})`,
      /facts_destination_external_id_uq/,
    );
    await assert.rejects(
      sql`INSERT INTO facts (effect_id, destination, external_id, occurred_at, confirmed_by, evidence_id) VALUES ('e-2', 'social-feed', 'obj_9', now(), 'human', ${evidence!.evidence_id})`,
      /names destination social-feed/,
    );
    await sql`UPDATE effects SET stage = 'recorded' WHERE effect_id = 'e-1'`;
    await assert.rejects(sql`UPDATE effects SET stage = 'attempted' WHERE effect_id = 'e-1'`, /terminal/);
    await assert.rejects(sql`UPDATE effects SET stage = 'done' WHERE effect_id = 'e-2'`, /stage_known/);
  });

  // Issue 10: "never two, never lost, never silently stuck" — however a workflow got there.
  const effect = (id: string, destination = 'keyed-api') =>
    sql`INSERT INTO effects (effect_id, destination, operation, fingerprint, payload, approved_by, authorization_ref, summary, mechanism)
        VALUES (${id}, ${destination}, 'task.create', ${sha('a')}, '{}', 'ana', 'T-1', 'task', 'idempotency_key')`;
  const release = (id: string, step = 'main', position = 1, destination = 'keyed-api') =>
    sql`INSERT INTO releases (effect_id, revision, step, position, destination, operation, target, package, body_sha256, released_by)
        VALUES (${id}, 1, ${step}, ${position}, ${destination}, 'task.create', 'POST /v1/objects', '{}', ${sha('b')}, 'ana')`;
  const attempt = (id: string, n: number, step = 'main', key = id) =>
    sql`INSERT INTO attempts (effect_id, step, attempt_number, idempotency_key, release_revision, workflow_run_id) VALUES (${id}, ${step}, ${n}, ${key}, 1, 'run-1')`;
  const stage = (id: string, to: string) => sql`UPDATE effects SET stage = ${to} WHERE effect_id = ${id}`;
  const fact = async (tx: postgres.Sql | postgres.TransactionSql, id: string, externalId: string) => {
    const [row] =
      await tx`INSERT INTO provider_evidence (effect_id, kind, outcome, detail) VALUES (${id}, 'readback', 'found', '{}') RETURNING evidence_id`;
    await tx`INSERT INTO facts (effect_id, destination, external_id, occurred_at, confirmed_by, evidence_id) VALUES (${id}, 'keyed-api', ${externalId}, now(), 'readback', ${row!.evidence_id})`;
  };
  const started = async (id: string) => {
    await effect(id);
    await release(id);
    await attempt(id, 1);
    await stage(id, 'attempted');
  };

  test('refuses an attempt for a terminal effect or one that already has its fact', async () => {
    await started('t-rejected');
    await stage('t-rejected', 'rejected');
    await assert.rejects(attempt('t-rejected', 2), /t-rejected is rejected \(terminal\): no new attempt/);
    await started('t-abandoned');
    await stage('t-abandoned', 'unknown');
    await stage('t-abandoned', 'abandoned');
    await assert.rejects(attempt('t-abandoned', 2), /abandoned \(terminal\)/);
    await started('t-recorded');
    await fact(sql, 't-recorded', 'obj_t1');
    await stage('t-recorded', 'recorded');
    await assert.rejects(attempt('t-recorded', 2), /recorded \(terminal\)/);
    await assert.rejects(attempt('t-recorded', 1, 'email', 't-recorded~email'), /terminal/, 'another step too');
    // A fact while the stage is still unknown (a readback, before its stage write): no attempt either.
    await started('t-fact');
    await stage('t-fact', 'unknown');
    await assert.rejects(
      sql.begin(async (tx) => {
        await fact(tx, 't-fact', 'obj_t2');
        await tx`INSERT INTO attempts (effect_id, step, attempt_number, idempotency_key, release_revision, workflow_run_id) VALUES ('t-fact', 'main', 2, 't-fact', 1, 'run-1')`;
      }),
      /already has its fact: no new attempt/,
    );
    // A retried recordAttempt re-inserting its own row is not a new attempt: it passes to ON CONFLICT.
    await sql`INSERT INTO attempts (effect_id, step, attempt_number, idempotency_key, release_revision, workflow_run_id)
              VALUES ('t-recorded', 'main', 1, 't-recorded', 1, 'run-1') ON CONFLICT DO NOTHING`;
  });

  test('refuses an attempt from a run that does not own the effect (has not seen its latest attempt)', async () => {
    await started('t-zombie');
    await attempt('t-zombie', 3); // the owning run moved on (a resumed run numbers after what it read back)
    // A superseded run's activity, still believing attempt 2 is next: refused, whatever code path sent it.
    await assert.rejects(attempt('t-zombie', 2), /has not seen attempt 3/);
    // Its own attempt again is no new attempt (a retried insert), and the owner adds the next.
    await sql`INSERT INTO attempts (effect_id, step, attempt_number, idempotency_key, release_revision, workflow_run_id)
              VALUES ('t-zombie', 'main', 1, 't-zombie', 1, 'run-1') ON CONFLICT DO NOTHING`;
    await attempt('t-zombie', 4);
    const rows = await sql`SELECT attempt_number FROM attempts WHERE effect_id = 't-zombie' ORDER BY 1`;
    assert.deepEqual(
      rows.map((r) => r.attempt_number),
      [1, 3, 4],
    );
  });

  test('refuses a fact for an effect that was rejected or abandoned', async () => {
    await assert.rejects(fact(sql, 't-rejected', 'obj_r'), /t-rejected is rejected: it can have no fact/);
    await assert.rejects(fact(sql, 't-abandoned', 'obj_a'), /t-abandoned is abandoned: it can have no fact/);
    const [row] = await sql`SELECT count(*)::int AS n FROM facts WHERE effect_id IN ('t-rejected', 't-abandoned')`;
    assert.equal(row!.n, 0);
  });

  test('refuses recorded without a fact, and rejected or abandoned with one', async () => {
    await started('t-nofact');
    await assert.rejects(stage('t-nofact', 'recorded'), /t-nofact cannot be recorded without its fact/);
    await stage('t-nofact', 'unknown');
    await stage('t-nofact', 'reconciled');
    await assert.rejects(stage('t-nofact', 'recorded'), /without its fact/);
    await started('t-hasfact');
    await stage('t-hasfact', 'unknown');
    for (const to of ['rejected', 'abandoned'])
      await assert.rejects(
        sql.begin(async (tx) => {
          await fact(tx, 't-hasfact', 'obj_h');
          await tx`UPDATE effects SET stage = ${to} WHERE effect_id = 't-hasfact'`;
        }),
        new RegExp(`has its fact; it cannot be ${to}`),
      );
    // Fact first, then the stage, in one transaction: how progress.ts records.
    await sql.begin(async (tx) => {
      await fact(tx, 't-hasfact', 'obj_h');
      await tx`UPDATE effects SET stage = 'recorded' WHERE effect_id = 't-hasfact'`;
    });
  });

  test('multi-step: a fact per step, at its own destination; recorded only when every step has its fact', async () => {
    const factOf = async (id: string, step: string, destination: string, externalId: string) => {
      const [row] =
        await sql`INSERT INTO provider_evidence (effect_id, step, kind, outcome, detail) VALUES (${id}, ${step}, 'readback', 'found', '{}') RETURNING evidence_id`;
      await sql`INSERT INTO facts (effect_id, step, destination, external_id, occurred_at, confirmed_by, evidence_id) VALUES (${id}, ${step}, ${destination}, ${externalId}, now(), 'readback', ${row!.evidence_id})`;
    };
    await started('m-1');
    await release('m-1', 'announce', 2, 'social-feed');
    await assert.rejects(release('m-1', 'later', 1), /releases_effect_revision_position_uq|main_step_first/);
    await assert.rejects(
      release('m-1', 'again', 3, 'keyed-api').then(() => release('m-1', 'again', 4)),
      /uq/,
    );
    await factOf('m-1', 'main', 'keyed-api', 'obj_m1');
    await assert.rejects(attempt('m-1', 2), /step main already has its fact/, 'the settled step takes no attempt');
    await attempt('m-1', 1, 'announce', 'm-1~announce'); // the next step still may
    await assert.rejects(
      factOf('m-1', 'announce', 'keyed-api', 'obj_m2'),
      /names destination keyed-api, which no release of that step goes to/,
    );
    await assert.rejects(stage('m-1', 'recorded'), /cannot be recorded without its fact \(2 step\(s\) have none\)/);
    await factOf('m-1', 'announce', 'social-feed', 'post_m1');
    await assert.rejects(factOf('m-1', 'announce', 'social-feed', 'post_m2'), /facts_effect_step_pk/);
    await assert.rejects(stage('m-1', 'recorded'), /cannot be recorded without its fact/, 'step "again" has none');
    // A refused later step: rejected with the earlier steps' facts kept.
    await started('m-2');
    await release('m-2', 'announce', 2, 'social-feed');
    await factOf('m-2', 'main', 'keyed-api', 'obj_m3');
    await stage('m-2', 'rejected');
    await assert.rejects(factOf('m-2', 'announce', 'social-feed', 'post_m3'), /m-2 is rejected: it can have no fact/);
    // A main step elsewhere than its effect, or a step that changes destination in a later revision: refused.
    await effect('m-3');
    await assert.rejects(release('m-3', 'main', 1, 'social-feed'), /main step goes to social-feed/);
  });

  test('step keys cannot collide: effect A step x may not use the key A:x (effect A:x’s own key)', async () => {
    await effect('A');
    await release('A');
    await effect('A:x');
    await release('A:x');
    await attempt('A:x', 1); // effect A:x, main step: key A:x
    await release('A', 'x', 2);
    await assert.rejects(attempt('A', 1, 'x', 'A:x'), /key_is_effect_scoped/);
    await attempt('A', 1, 'x', 'A~x');
    await assert.rejects(attempt('A', 1, 'main', 'A~main'), /key_is_effect_scoped/, 'the main key is the effect ID');
    await attempt('A', 1);
  });

  test('the ledger code paths satisfy these invariants (progress.ts)', async () => {
    const ledger = openLedger(url, { max: 1 });
    try {
      const { db } = ledger;
      await effect('p-1');
      const input = {
        effectId: 'p-1',
        revision: 1,
        destination: 'keyed-api',
        operation: 'task.create',
        target: 'POST /v1/objects',
        package: { target: 'POST /v1/objects', body: {} },
        bodySha256: sha('b'),
        releasedBy: 'ana',
        idempotencyKey: 'p-1',
      };
      assert.equal((await releaseEffect(db, input, 'main')).fact, null);
      const run = { effectId: 'p-1', step: 'main', idempotencyKey: 'p-1', releaseRevision: 1, workflowRunId: 'r' };
      const first = await recordAttempt(db, { ...run, attemptNumber: 1 });
      await recordAttempt(db, { ...run, attemptNumber: 1 }); // a retried activity finds its row
      await recordEvidence(
        db,
        { effectId: 'p-1', attemptId: first.attemptId, kind: 'response', outcome: 'unknown', detail: {} },
        'unknown',
      );
      // Readback records the fact while the stage is unknown, then the stage, in one transaction.
      const { fact: row } = await recordEvidence(
        db,
        { effectId: 'p-1', attemptId: null, kind: 'readback', outcome: 'found', externalId: 'obj_p1', detail: {} },
        'recorded',
        {
          destination: 'keyed-api',
          externalId: 'obj_p1',
          occurredAt: new Date().toISOString(),
          confirmedBy: 'readback',
        },
      );
      assert.equal(row?.externalId, 'obj_p1');
      assert.equal((await readEffect(db, 'p-1'))?.stage, 'recorded');
      // A new run releasing an effect that has its fact learns of it; nothing moves.
      assert.equal((await releaseEffect(db, input, 'main')).fact?.externalId, 'obj_p1');
      // A retried recordAttempt of the attempt that exists still answers; a new attempt is refused, typed.
      await recordAttempt(db, { ...run, attemptNumber: 1 });
      await assert.rejects(recordAttempt(db, { ...run, attemptNumber: 2 }), (error) => {
        assert.ok(error instanceof LedgerInvariantError, String(error));
        assert.match(error.message, /recorded \(terminal\): no new attempt/);
        return true;
      });
      // Abandon after the fact: the stage write skips terminal stages, so nothing changes.
      await recordDecision(
        db,
        {
          requestRef: 'p-1:1',
          effectId: 'p-1',
          kind: 'abandon',
          actor: 'ops',
          reason: 'late',
          payload: {},
          accepted: true,
        },
        'abandoned',
      );
      assert.equal((await readEffect(db, 'p-1'))?.stage, 'recorded');
      // A rejected effect: a (buggy) fact write is refused as LedgerInvariantError, not retried forever.
      await started('p-2');
      await stage('p-2', 'rejected');
      await assert.rejects(
        recordEvidence(
          db,
          { effectId: 'p-2', attemptId: null, kind: 'readback', outcome: 'found', externalId: 'obj_p2', detail: {} },
          'recorded',
          {
            destination: 'keyed-api',
            externalId: 'obj_p2',
            occurredAt: new Date().toISOString(),
            confirmedBy: 'readback',
          },
        ),
        LedgerInvariantError,
      );
    } finally {
      await ledger.close();
    }
  });

  const effectRow = (id: string, fingerprint: string) =>
    sql`INSERT INTO effects (effect_id, destination, operation, fingerprint, payload, approved_by, authorization_ref, summary, mechanism)
        VALUES (${id}, 'social-feed', 'post.publish', ${fingerprint}, '{}', 'ana', 'T-9', 'post', 'none')`;

  for (const terminal of ['rejected', 'abandoned'] as const) {
    test(`a ${terminal} effect is final: no move out of it, no change to it, never deleted`, async () => {
      const id = `e-${terminal}`;
      await effectRow(id, sha(terminal === 'rejected' ? '1' : '2'));
      await sql`UPDATE effects SET stage = 'released' WHERE effect_id = ${id}`;
      await sql`UPDATE effects SET stage = 'attempted' WHERE effect_id = ${id}`;
      await sql`UPDATE effects SET stage = 'unknown' WHERE effect_id = ${id}`;
      await sql`UPDATE effects SET stage = ${terminal} WHERE effect_id = ${id}`;
      for (const next of ['attempted', 'unknown', 'recorded', 'released']) {
        await assert.rejects(sql`UPDATE effects SET stage = ${next} WHERE effect_id = ${id}`, /terminal/, next);
      }
      await assert.rejects(
        sql`UPDATE effects SET approved_by = 'mallory' WHERE effect_id = ${id}`,
        /immutable except for its stage|terminal/,
      );
      await assert.rejects(sql`DELETE FROM effects WHERE effect_id = ${id}`, /never deleted/);
      const [row] = await sql`SELECT stage FROM effects WHERE effect_id = ${id}`;
      assert.equal(row!.stage, terminal);
    });
  }

  test('two passes failing the same start at once: the one whose transaction began first keeps the row in time order', async () => {
    await effectRow('e-unstartable', sha('4'));
    const earlier = openLedger(url, { max: 1 });
    const later = openLedger(url, { max: 1 });
    try {
      // The earlier pass's transaction began before the later one's insert: its now() is older than the row's.
      await earlier.db.transaction(async (tx) => {
        const [began] = await tx.execute<{ now: string }>(drizzleSql`SELECT now()::text AS now`);
        await recordStartFailure(later.db, 'e-unstartable', 'the later pass');
        const [first] =
          await sql`SELECT first_failed_at > ${String(began?.now)}::timestamptz AS after FROM start_failures WHERE effect_id = 'e-unstartable'`;
        assert.equal(first?.after, true, 'the interleaving this test is about: the row is newer than the earlier pass');
        await recordStartFailure(tx, 'e-unstartable', 'the earlier pass');
      });
    } finally {
      await earlier.close();
      await later.close();
    }
    const [row] =
      await sql`SELECT failures, reason, first_failed_at <= last_failed_at AS ordered FROM start_failures WHERE effect_id = 'e-unstartable'`;
    assert.deepEqual({ ...row }, { failures: 2, reason: 'the earlier pass', ordered: true });
  });

  test('evidence and decisions are append-only: no UPDATE, no DELETE', async () => {
    await effectRow('e-decided', sha('3'));
    const [evidence] =
      await sql`INSERT INTO provider_evidence (effect_id, attempt_id, kind, outcome, coverage, detail) VALUES ('e-decided', NULL, 'readback', 'absent', 'complete', '{}') RETURNING evidence_id`;
    const [decision] =
      await sql`INSERT INTO decisions (request_ref, effect_id, kind, actor, reason, payload, accepted) VALUES ('ref-1', 'e-decided', 'abandon', 'ops@example.com', 'campaign cancelled', '{}', true) RETURNING decision_id`;
    await assert.rejects(
      sql`UPDATE provider_evidence SET outcome = 'found' WHERE evidence_id = ${evidence!.evidence_id}`,
      /append-only: UPDATE refused/,
    );
    await assert.rejects(
      sql`DELETE FROM provider_evidence WHERE evidence_id = ${evidence!.evidence_id}`,
      /append-only: DELETE refused/,
    );
    await assert.rejects(
      sql`UPDATE decisions SET accepted = false WHERE decision_id = ${decision!.decision_id}`,
      /append-only: UPDATE refused/,
    );
    await assert.rejects(
      sql`UPDATE decisions SET actor = 'someone else' WHERE decision_id = ${decision!.decision_id}`,
      /append-only: UPDATE refused/,
    );
    await assert.rejects(
      sql`DELETE FROM decisions WHERE decision_id = ${decision!.decision_id}`,
      /append-only: DELETE refused/,
    );
    const [count] = await sql`SELECT count(*)::int AS n FROM decisions WHERE effect_id = 'e-decided'`;
    assert.equal(count!.n, 1);
  });
});
