// Poison input is refused at the door with a typed InvalidEffectRequestError, and nothing is written:
// text PostgreSQL cannot store (NUL, lone surrogates) in any field, key or payload string; names that
// collide with Object.prototype; reserved keys; nesting deep enough to break anything recursive; circular
// values. Validation is pure, so most of this runs without any server; the last suite proves, against a
// real PostgreSQL (no Temporal), that the client and the CLI write nothing, and why the door must refuse.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Client } from '@temporalio/client';
import { count, eq } from 'drizzle-orm';
import { EffectLedgerClient } from '../client/effect-ledger-client.js';
import { MAX_PAYLOAD_DEPTH, validateEffectRequest } from '../client/effect-request.js';
import { parseDecision } from '../domain/decisions.js';
import { findJsonProblem, textProblem } from '../domain/storable.js';
import { postRequest, taskRequest } from '../harness/sample-requests.js';
import { type Ledger, openLedger } from '../ledger/db.js';
import { InvalidEffectRequestError, type InvalidRequestCode } from '../ledger/errors.js';
import { migrateLedger } from '../ledger/migrate.js';
import { recordDecision } from '../ledger/progress.js';
import { registerEffect } from '../ledger/registration.js';
import { decisions, effects } from '../ledger/schema.js';

const NUL = '\u0000';
const HIGH = '\uD800'; // a high surrogate with no low one after it
const LOW = '\uDC00'; // a low surrogate with no high one before it

const valid = taskRequest('task:poison', 'request-1');
const withPayload = (payload: Record<string, unknown>) => ({ ...valid, payload: { ...valid.payload, ...payload } });

function nested(levels: number): unknown {
  let value: unknown = 'bottom';
  for (let i = 0; i < levels; i++) value = [value];
  return value;
}
function circular(): Record<string, unknown> {
  const payload: Record<string, unknown> = { ...valid.payload };
  payload.self = payload;
  return payload;
}
function circularThroughArray(): Record<string, unknown> {
  const list: unknown[] = [];
  const payload = { ...valid.payload, notes: list };
  list.push({ back: payload });
  return payload;
}

interface Poison {
  name: string;
  request: unknown;
  code: InvalidRequestCode;
  /** The message must say this: refused by the guard, not by a TypeError or a stray schema rule. */
  says: RegExp;
  /** Representable as JSON text: also fed to the CLI from a file. */
  json?: boolean;
}

// Keys as JSON.parse makes them: an own "__proto__" property (an object literal would set the prototype).
const protoKey = (value: unknown) => JSON.parse(`{"__proto__": ${JSON.stringify(value)}}`) as Record<string, unknown>;

const POISONS: Poison[] = [
  {
    name: 'NUL in approvedBy',
    request: { ...valid, approvedBy: `ana${NUL}` },
    code: 'malformed',
    says: /approvedBy: contains a NUL/,
    json: true,
  },
  {
    name: 'NUL in authorizationRef',
    request: { ...valid, authorizationRef: `T${NUL}-9` },
    code: 'malformed',
    says: /authorizationRef: contains a NUL/,
  },
  {
    name: 'NUL in summary',
    request: { ...valid, summary: `${NUL}hello` },
    code: 'malformed',
    says: /summary: contains a NUL/,
  },
  {
    name: 'NUL in effectId',
    request: { ...valid, effectId: `task:${NUL}` },
    code: 'malformed',
    says: /effectId: contains a NUL/,
  },
  {
    name: 'NUL in a payload string',
    request: withPayload({ title: `Pre${NUL}view` }),
    code: 'invalid_payload',
    says: /payload\.title contains a NUL/,
    json: true,
  },
  {
    name: 'NUL in a nested payload string',
    request: withPayload({ notes: [{ deep: `x${NUL}` }] }),
    code: 'invalid_payload',
    says: /payload\.notes\[0\]\.deep contains a NUL/,
  },
  {
    name: 'NUL in a payload key',
    request: withPayload({ [`no${NUL}tes`]: 'x' }),
    code: 'invalid_payload',
    says: /payload has a key that contains a NUL/,
    json: true,
  },
  {
    name: 'NUL in a request field name',
    request: { ...valid, [`summary${NUL}`]: 'x' },
    code: 'malformed',
    says: /a field name contains a NUL/,
  },
  {
    name: 'lone high surrogate in approvedBy',
    request: { ...valid, approvedBy: `ana${HIGH}` },
    code: 'malformed',
    says: /approvedBy: contains a lone surrogate/,
    json: true,
  },
  {
    name: 'lone low surrogate in summary',
    request: { ...valid, summary: `${LOW}hello` },
    code: 'malformed',
    says: /summary: contains a lone surrogate/,
  },
  {
    name: 'lone surrogate in a payload string',
    request: withPayload({ title: `Preview ${HIGH}` }),
    code: 'invalid_payload',
    says: /payload\.title contains a lone surrogate/,
    json: true,
  },
  {
    name: 'surrogates in the wrong order in a payload string',
    request: withPayload({ title: `${LOW}${HIGH}` }),
    code: 'invalid_payload',
    says: /lone surrogate/,
  },
  {
    name: 'lone surrogate in a payload key',
    request: withPayload({ [`notes${LOW}`]: 'x' }),
    code: 'invalid_payload',
    says: /payload has a key that contains a lone surrogate/,
    json: true,
  },
  ...['constructor', '__proto__', 'toString', 'hasOwnProperty'].map(
    (name): Poison => ({
      name: `destination "${name}"`,
      request: { ...valid, destination: name },
      code: 'unknown_destination',
      says: /unknown destination/,
      json: true,
    }),
  ),
  ...['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf'].map(
    (name): Poison => ({
      name: `operation "${name}"`,
      request: { ...valid, operation: name },
      code: 'unknown_operation',
      says: /has no operation/,
      json: name === 'toString',
    }),
  ),
  {
    name: 'a "__proto__" key in the payload',
    request: { ...valid, payload: { ...valid.payload, ...protoKey({ admin: true }) } },
    code: 'invalid_payload',
    says: /payload has the key "__proto__"/,
    json: true,
  },
  {
    name: 'a nested "__proto__" key',
    request: withPayload({ notes: protoKey('x') }),
    code: 'invalid_payload',
    says: /payload\.notes has the key "__proto__"/,
  },
  {
    name: 'a "__proto__" field in the request',
    request: { ...valid, ...protoKey('x') },
    code: 'malformed',
    says: /field name "__proto__" is reserved/,
  },
  {
    name: '2,300 nested arrays',
    request: withPayload({ notes: nested(2300) }),
    code: 'invalid_payload',
    says: /nests deeper than 32 levels/,
    json: true,
  },
  {
    name: '100,000 nested objects',
    request: withPayload({ notes: JSON.parse(`${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}`) }),
    code: 'invalid_payload',
    says: /nests deeper than 32 levels/,
  },
  {
    name: 'one level past the depth limit',
    request: withPayload({ notes: nested(MAX_PAYLOAD_DEPTH) }),
    code: 'invalid_payload',
    says: /nests deeper than 32 levels/,
  },
  {
    name: 'a circular payload',
    request: { ...valid, payload: circular() },
    code: 'invalid_payload',
    says: /payload\.self refers back .* \(circular\)/,
  },
  {
    name: 'a payload circular through an array',
    request: { ...valid, payload: circularThroughArray() },
    code: 'invalid_payload',
    says: /circular/,
  },
  {
    name: 'a sparse array of a billion holes',
    request: withPayload({ notes: new Array(1e9) }),
    code: 'payload_too_large',
    says: /holds 1000000000 items/,
  },
];

describe('poison input refused at the door (pure validation, no server)', () => {
  for (const { name, request, code, says } of POISONS) {
    test(`${name} → InvalidEffectRequestError(${code})`, () => {
      assert.throws(
        () => validateEffectRequest(request),
        (error) => {
          assert.ok(error instanceof InvalidEffectRequestError, String(error));
          assert.equal(error.code, code, error.message);
          assert.match(error.message, says);
          return true;
        },
      );
    });
  }

  test('the depth limit is exact: 32 levels pass the guard, 33 do not, checked without recursion', () => {
    assert.equal(findJsonProblem(nested(MAX_PAYLOAD_DEPTH - 1), 'p'), null, '31 arrays + a string inside a payload');
    assert.equal(findJsonProblem(nested(MAX_PAYLOAD_DEPTH), 'p'), null, '32 levels');
    assert.equal(findJsonProblem(nested(MAX_PAYLOAD_DEPTH + 1), 'p')?.kind, 'depth');
    assert.equal(findJsonProblem(nested(1_000_000), 'p')?.kind, 'depth', 'a million levels: no RangeError');
  });

  test('a summary cut never splits a surrogate pair (sliced by code points)', () => {
    // The cut falls on an emoji: by UTF-16 units it would keep half of one.
    const task = validateEffectRequest({
      ...valid,
      payload: { title: `${'x'.repeat(186)}${'😀'.repeat(7)}`, request: 'r-1' },
    });
    const post = validateEffectRequest(postRequest('post:poison', `${'x'.repeat(39)}😀😀😀`));
    for (const { summary } of [task, post]) {
      assert.equal(textProblem(summary), null, JSON.stringify(summary));
      assert.ok(Array.from(summary).length <= 200);
    }
    assert.match(task.summary, /😀…$/);
    assert.equal(post.summary, `post on linkedin-ru: "${'x'.repeat(39)}😀…"`);
  });

  const decisionPoisons: Array<[string, string]> = [
    ['actor', `ops${NUL}`],
    ['actor', `ops${HIGH}`],
    ['reason', `checked${NUL}`],
    ['reason', `${LOW}checked`],
    ['externalId', `post_1${NUL}`],
    ['externalId', `post_1${HIGH}`],
    ['externalUrl', `https://x.example/p/1${NUL}`],
    ['externalUrl', `https://x.example/p/${LOW}`],
  ];
  test(`decisions: NUL or a lone surrogate in actor, reason, externalId or externalUrl is refused (${decisionPoisons.length} cases)`, () => {
    for (const [field, value] of decisionPoisons) {
      const parsed = parseDecision('confirm-delivery', {
        actor: 'ops@example.com',
        reason: 'it is live',
        externalId: 'post_1',
        [field]: value,
      });
      assert.equal(parsed.ok, false, `${field}: ${JSON.stringify(value)}`);
      if (parsed.ok) continue;
      assert.match(parsed.error, new RegExp(`^${field} contains a (NUL|lone surrogate)`));
      // The refusal itself is storable: the workflow records it in the ledger.
      assert.equal(textProblem(parsed.error), null);
      assert.equal(textProblem(parsed.actor), null);
    }
    const keyed = parseDecision('abandon', { actor: `ops${NUL}`, reason: 'x', [`for${NUL}ce`]: true });
    assert.equal(keyed.ok, false);
    assert.equal(!keyed.ok && textProblem(keyed.error), null, 'an unknown field name is shown escaped');
    assert.equal(!keyed.ok && keyed.actor, 'ops\uFFFD');
  });
});

const adminUrl = process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** Runs `effect approve <file>` against the throwaway ledger and an address where no Temporal listens. */
function approveFromFile(databaseUrl: string, file: string): Promise<{ code: number | null; stderr: string }> {
  const entry = fileURLToPath(new URL('../scripts/effect-cli.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', entry, 'approve', file], {
    env: { ...process.env, DATABASE_URL: databaseUrl, TEMPORAL_ADDRESS: '127.0.0.1:1' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stderr })));
}

describe('poison input writes nothing (real PostgreSQL, no Temporal)', () => {
  const dbName = `effect_ledger_poison_${randomBytes(5).toString('hex')}`;
  let url: string;
  let ledger: Ledger;
  const effectCount = async () => (await ledger.db.select({ n: count() }).from(effects))[0]!.n;

  before(async () => {
    const u = new URL(adminUrl);
    u.pathname = `/${dbName}`;
    url = u.toString();
    await migrateLedger(url);
    ledger = openLedger(url, { max: 2 });
  });
  after(async () => {
    await ledger?.close();
    const { default: postgres } = await import('postgres');
    const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
    await admin.unsafe(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`).finally(() => admin.end());
  });

  test('why the door must refuse: PostgreSQL fails on NUL (text and jsonb) and lone surrogates (jsonb), or corrupts them (text)', async () => {
    const release = {
      steps: [
        {
          step: 'main',
          position: 1,
          destination: 'keyed-api',
          operation: 'task.create',
          package: { target: 'POST /v1/objects task', body: { title: 'x' } },
          bodySha256: 'c'.repeat(64),
        },
      ],
    };
    const registration = (id: string, over: Record<string, unknown>) => ({
      effectId: id,
      destination: 'keyed-api',
      operation: 'task.create',
      fingerprint: 'a'.repeat(64),
      payload: valid.payload,
      approvedBy: 'ana',
      authorizationRef: 'T-1',
      summary: 'task',
      mechanism: 'idempotency_key',
      keyRetentionSeconds: null,
      ...over,
    });
    await assert.rejects(registerEffect(ledger.db, registration('pg:1', { approvedBy: `ana${NUL}` }), release));
    await assert.rejects(registerEffect(ledger.db, registration('pg:2', { payload: { title: `x${NUL}` } }), release));
    await assert.rejects(registerEffect(ledger.db, registration('pg:3', { payload: { title: `x${HIGH}` } }), release));
    const [read] = await ledger.sql`SELECT ${`ana${HIGH}`}::text AS t`;
    assert.equal(read?.t, 'ana\uFFFD', 'a lone surrogate in text is silently replaced: not what was approved');
    assert.equal(await effectCount(), 0);
  });

  test('through EffectLedgerClient.approve: every poison gets its typed error, no ledger row, Temporal never touched', async () => {
    const temporal = new Proxy({} as Client, {
      get: (_target, property) => {
        throw new Error(`Temporal was touched (${String(property)}) for poison input`);
      },
    });
    const client = new EffectLedgerClient({ client: temporal, db: ledger.db, taskQueue: 'never' });
    for (const { name, request, code } of POISONS) {
      await assert.rejects(client.approve(request), (error) => {
        assert.ok(error instanceof InvalidEffectRequestError, `${name}: ${String(error)}`);
        assert.equal(error.code, code, name);
        return true;
      });
    }
    assert.equal(await effectCount(), 0);
  });

  test('the CLI approving from a file: exit code 2 for each poison class, nothing written', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'poison-'));
    try {
      const fromFiles = POISONS.filter((p) => p.json);
      for (const [i, { name, request }] of fromFiles.entries()) {
        const file = join(dir, `${i}.json`);
        writeFileSync(file, JSON.stringify(request), 'utf8');
        const run = await approveFromFile(url, file);
        assert.equal(run.code, 2, `${name}: ${run.stderr}`);
        assert.match(run.stderr, /^InvalidEffectRequestError: /, name);
      }
      assert.ok(fromFiles.length >= 10, `${fromFiles.length} classes through the CLI`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    assert.equal(await effectCount(), 0);
  });

  test('a refused decision carrying poison is recorded, made storable: the activity cannot fail on it forever', async () => {
    await registerEffect(
      ledger.db,
      {
        effectId: 'post:decided',
        destination: 'social-feed',
        operation: 'post.publish',
        fingerprint: 'b'.repeat(64),
        payload: { channel: 'c', text: 't' },
        approvedBy: 'ana',
        authorizationRef: 'T-2',
        summary: 'post',
        mechanism: 'none',
        keyRetentionSeconds: null,
      },
      {
        steps: [
          {
            step: 'main',
            position: 1,
            destination: 'social-feed',
            operation: 'post.publish',
            package: { target: 'POST /social/v1/posts', body: { text: 't' } },
            bodySha256: 'd'.repeat(64),
          },
        ],
      },
    );
    const raw = { actor: `ops${NUL}`, reason: `x${HIGH}`, [`for${NUL}ce`]: [nested(100)], ...protoKey(1) };
    const parsed = parseDecision('abandon', raw);
    assert.equal(parsed.ok, false);
    if (parsed.ok) return;
    await recordDecision(ledger.db, {
      requestRef: 'run-1:1',
      effectId: 'post:decided',
      kind: 'abandon',
      actor: parsed.actor,
      reason: `x${LOW}`,
      payload: raw,
      accepted: false,
      rejectionReason: `${parsed.error} ${NUL}`,
    });
    const [row] = await ledger.db.select().from(decisions).where(eq(decisions.effectId, 'post:decided'));
    assert.equal(row?.accepted, false);
    assert.equal(row?.actor, 'ops\uFFFD');
    const stored = (row!.payload as { value: Record<string, unknown> }).value;
    assert.deepEqual(Object.keys(stored), ['actor', 'reason', 'for\uFFFDce', '__proto__']);
    assert.match(JSON.stringify(stored), /nested deeper than 32 levels/);
  });
});
