// Readback requests take turns per destination in the ledger (ledger/readback-pace.ts): turns taken at once, from
// many connections as from many workers, start one request's share of a second apart, by PostgreSQL's clock;
// past the horizon none is taken and the caller is told when to come back; destinations do not share turns.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import postgres from 'postgres';
import { type Ledger, openLedger } from '../ledger/db.js';
import { migrateLedger } from '../ledger/migrate.js';
import { paceIntervalMs, type ReadbackTurn, takeReadbackTurn } from '../ledger/readback-pace.js';

const adminUrl = process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

describe('readback turns in the ledger', () => {
  const dbName = `effect_ledger_pace_${randomBytes(5).toString('hex')}`;
  let ledger: Ledger;

  before(async () => {
    const u = new URL(adminUrl);
    u.pathname = `/${dbName}`;
    await migrateLedger(u.toString());
    ledger = openLedger(u.toString(), { max: 8 });
  });
  after(async () => {
    await ledger?.close();
    const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
    await admin.unsafe(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`).finally(() => admin.end());
  });

  const waits = (turns: ReadbackTurn[]) => turns.map((t) => (t.taken ? t.waitMs : Number.NaN)).sort((a, b) => a - b);
  const starts = (turns: ReadbackTurn[]) =>
    turns.map((t) => (t.taken ? t.startsAt.getTime() : Number.NaN)).sort((a, b) => a - b);

  test("20 turns at once at 10 a second: one every 105 ms by the ledger's clock, the first at once", async () => {
    const turns = await Promise.all(Array.from({ length: 20 }, () => takeReadbackTurn(ledger.db, 'api-a', 10)));
    assert.ok(
      turns.every((t) => t.taken),
      'all within the horizon',
    );
    assert.ok(waits(turns)[0]! < paceIntervalMs(10), `the first leaves at once: ${waits(turns)[0]} ms`);
    // The row lock takes them one after another; each starts one request's share of a second after the one
    // before, whenever its statement ran (timestamps are whole microseconds).
    const at = starts(turns);
    for (let i = 1; i < at.length; i++) {
      const gap = at[i]! - at[i - 1]!;
      assert.ok(Math.abs(gap - paceIntervalMs(10)) <= 1, `turn ${i}: ${gap} ms after the one before`);
    }
    // So in any second, at most 10 of them.
    for (const start of at) assert.ok(at.filter((t) => t >= start && t < start + 1000).length <= 10);
  });

  test('past the horizon no turn is taken, and the answer says when to come back; other destinations are free', async () => {
    // 2 a second, a 2 s horizon: the first turns fill it, the next is refused.
    const taken: ReadbackTurn[] = [];
    for (let i = 0; i < 6; i++) taken.push(await takeReadbackTurn(ledger.db, 'api-b', 2));
    const refused = taken.filter((t) => !t.taken);
    assert.ok(refused.length >= 1, `a turn past the horizon is refused: ${JSON.stringify(taken)}`);
    for (const t of refused) assert.ok(!t.taken && t.retryInMs >= 1000);
    const latest = starts(taken.filter((t) => t.taken)).at(-1)! - starts(taken.filter((t) => t.taken))[0]!;
    assert.ok(latest <= 2000 + paceIntervalMs(2), `no turn taken beyond the horizon: the last ${latest} ms out`);
    const other = await takeReadbackTurn(ledger.db, 'api-c', 2);
    assert.deepEqual(other.taken && other.waitMs < 100, true, 'another destination has its own turns');
  });
});
