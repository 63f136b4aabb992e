// The database, not our code, refuses what would break the ledger's invariants.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import postgres from 'postgres';
import { migrateLedger } from '../ledger/migrate.js';

const adminUrl = process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const sha = (c: string) => c.repeat(64);

describe('ledger invariants (enforced by PostgreSQL)', () => {
  const dbName = `effect_ledger_test_${randomBytes(5).toString('hex')}`;
  let sql: postgres.Sql;

  before(async () => {
    const url = new URL(adminUrl);
    url.pathname = `/${dbName}`;
    await migrateLedger(url.toString());
    await migrateLedger(url.toString()); // applying twice is a no-op
    sql = postgres(url.toString(), { max: 1, onnotice: () => {} });
    await sql`INSERT INTO effects (effect_id, destination, operation, fingerprint, payload, approved_by, authorization_ref, summary, mechanism)
              VALUES ('e-1', 'keyed-api', 'task.create', ${sha('a')}, '{}', 'ana', 'T-1', 'task', 'idempotency_key')`;
    await sql`INSERT INTO releases (effect_id, revision, target, package, body_sha256, released_by) VALUES ('e-1', 1, 'POST /v1/objects', '{}', ${sha('b')}, 'ana')`;
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
      sql`INSERT INTO releases (effect_id, revision, target, package, body_sha256, released_by) VALUES ('e-1', 1, 't', '{}', ${sha('f')}, 'ana')`,
    /releases_effect_revision_uq/,
  );
  refuses(
    'rewriting an attempt',
    () => sql`UPDATE attempts SET idempotency_key = 'e-1' WHERE effect_id = 'e-1'`,
    /append-only/,
  );
  refuses('deleting an attempt', () => sql`DELETE FROM attempts`, /append-only/);
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
    /attempts_effect_step_number_uq/,
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
      /facts_pkey/,
    );
    await assert.rejects(sql`UPDATE facts SET external_id = 'obj_3'`, /append-only/);
    await sql`INSERT INTO effects (effect_id, destination, operation, fingerprint, payload, approved_by, authorization_ref, summary, mechanism) VALUES ('e-2', 'keyed-api', 'task.create', ${sha('9')}, '{}', 'ana', 'T-3', 'task', 'idempotency_key')`;
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
