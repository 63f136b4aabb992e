// Black-box tests of the provider simulator: the real process, real sockets, global fetch.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { after, before, beforeEach, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

interface Simulator {
  url: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

async function startSimulator(args: string[] = []): Promise<Simulator> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'harness/simulator/main.ts', '--port', '0', ...args], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const exited = once(child, 'exit');
  const url = await new Promise<string>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.once('line', (line) => resolve((JSON.parse(line) as { url: string }).url));
    child.once('exit', (code) => reject(new Error(`simulator exited before listening (code ${code})`)));
  });
  assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
  return {
    url,
    child,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

interface Res {
  status: number;
  headers: Headers;
  body: any;
}

function client(base: () => string) {
  return async (
    method: string,
    path: string,
    opts: { body?: unknown; raw?: string; headers?: Record<string, string>; signal?: AbortSignal } = {},
  ): Promise<Res> => {
    const init: RequestInit = { method, headers: { 'content-type': 'application/json', ...opts.headers } };
    if (opts.raw !== undefined) init.body = opts.raw;
    else if (opts.body !== undefined) init.body = JSON.stringify(opts.body);
    if (opts.signal) init.signal = opts.signal;
    const res = await fetch(`${base()}${path}`, init);
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null };
  };
}

async function waitFor(condition: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

const key = () => `key-${randomUUID()}`;
const withKey = (k: string) => ({ 'Idempotency-Key': k });

let sim: Simulator;
const call = client(() => sim.url);
const stats = async () => (await call('GET', '/_control/stats')).body;
const fault = async (spec: object) =>
  assert.equal((await call('POST', '/_control/faults', { body: spec })).status, 200);

before(async () => {
  sim = await startSimulator();
});
after(async () => {
  await sim.stop();
});
beforeEach(async () => {
  assert.equal((await call('POST', '/_control/reset')).status, 200);
});

describe('keyed API', () => {
  test('creates an object with the documented shape', async () => {
    const k = key();
    const body = { metadata: { effect_id: 'e1', a: '2' }, amount: 100 };
    const res = await call('POST', '/v1/objects', { body, headers: withKey(k) });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('idempotent-replayed'), null);
    const o = res.body;
    assert.match(o.id, /^obj_[A-Za-z0-9]{14}$/);
    assert.equal(o.object, 'object');
    assert.equal(o.idempotency_key, k);
    assert.deepEqual(o.metadata, body.metadata);
    assert.deepEqual(o.request, body);
    assert.equal(o.created, Math.floor(Date.parse(o.created_at) / 1000));
    const canonical = '{"amount":100,"metadata":{"a":"2","effect_id":"e1"}}';
    assert.equal(o.body_sha256, createHash('sha256').update(canonical).digest('hex'));
    assert.deepEqual((await call('GET', `/v1/objects/${o.id}`)).body, o);

    const plain = await call('POST', '/v1/objects', { body: { note: 'x' } });
    assert.equal(plain.body.idempotency_key, null);
    assert.deepEqual(plain.body.metadata, {});
  });

  test('same key and same body replays the first response', async () => {
    const k = key();
    const first = await call('POST', '/v1/objects', {
      body: { amount: 5, metadata: { effect_id: 'e' } },
      headers: withKey(k),
    });
    // Different key order, same canonical body.
    const again = await call('POST', '/v1/objects', {
      body: { metadata: { effect_id: 'e' }, amount: 5 },
      headers: withKey(k),
    });
    assert.equal(again.status, 200);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(again.body, first.body);
    assert.equal((await stats()).objects, 1);
  });

  test('same key with a different body is an idempotency_error', async () => {
    const k = key();
    await call('POST', '/v1/objects', { body: { amount: 5 }, headers: withKey(k) });
    const res = await call('POST', '/v1/objects', { body: { amount: 6 }, headers: withKey(k) });
    assert.equal(res.status, 400);
    assert.deepEqual(res.body, {
      error: {
        type: 'idempotency_error',
        message: 'Keys for idempotent requests can only be used with the same parameters they were first used with.',
      },
    });
    assert.equal((await stats()).objects, 1);
  });

  test('validation failures are rejected and not stored under the key', async () => {
    const k = key();
    for (const amount of [0, -1, 1.5, '5', null]) {
      const res = await call('POST', '/v1/objects', { body: { amount }, headers: withKey(k) });
      assert.equal(res.status, 400);
      assert.equal(res.body.error.type, 'invalid_request_error');
      assert.equal(res.body.error.code, 'parameter_invalid');
      assert.equal(res.body.error.param, 'amount');
    }
    assert.equal((await call('GET', `/v1/idempotency_keys/${k}`)).status, 404);
    const ok = await call('POST', '/v1/objects', { body: { amount: 1 }, headers: withKey(k) });
    assert.equal(ok.status, 200);
    assert.equal(ok.headers.get('idempotent-replayed'), null);

    for (const raw of ['[1]', '"x"', '{oops', '']) {
      const res = await call('POST', '/v1/objects', { raw });
      assert.equal(res.status, 400, raw);
      assert.equal(res.body.error.type, 'invalid_request_error');
    }
    const longKey = await call('POST', '/v1/objects', { body: {}, headers: withKey('k'.repeat(256)) });
    assert.equal(longKey.status, 400);
    assert.equal((await call('POST', '/v1/objects', { body: {}, headers: withKey('k'.repeat(255)) })).status, 200);
    assert.equal((await stats()).objects, 2);
  });

  test('a second request while the key is in flight gets 409 idempotency_key_in_use', async () => {
    const k = key();
    await fault({ kind: 'delay_before_commit', path: '/v1/objects', delayMs: 500 });
    const first = call('POST', '/v1/objects', { body: { amount: 7 }, headers: withKey(k) });
    await waitFor(async () => (await call('GET', `/v1/idempotency_keys/${k}`)).body?.status === 'in_flight');
    const second = await call('POST', '/v1/objects', { body: { amount: 7 }, headers: withKey(k) });
    assert.equal(second.status, 409);
    assert.equal(second.body.error.type, 'idempotency_error');
    assert.equal(second.body.error.code, 'idempotency_key_in_use');
    const done = await first;
    assert.equal(done.status, 200);
    const third = await call('POST', '/v1/objects', { body: { amount: 7 }, headers: withKey(k) });
    assert.equal(third.headers.get('idempotent-replayed'), 'true');
    assert.equal(third.body.id, done.body.id);
    assert.equal((await stats()).objects, 1);
  });

  test('lookup by idempotency key', async () => {
    const missing = await call('GET', '/v1/idempotency_keys/nope');
    assert.equal(missing.status, 404);
    assert.equal(missing.body.error.code, 'resource_missing');
    const k = `odd key/${randomUUID()}`;
    const created = await call('POST', '/v1/objects', { body: { amount: 3 }, headers: withKey(k) });
    const res = await call('GET', `/v1/idempotency_keys/${encodeURIComponent(k)}`);
    assert.equal(res.status, 200);
    assert.equal(res.body.key, k);
    assert.equal(res.body.status, 'completed');
    assert.equal(res.body.object_id, created.body.id);
    assert.equal(Date.parse(res.body.expires_at) - Date.parse(res.body.created_at), 86_400_000);
  });

  test('list is newest first, paginates, and filters by metadata', async () => {
    const ids: string[] = [];
    for (const effect of ['A', 'B', 'A', null]) {
      const body = effect ? { metadata: { effect_id: effect, n: ids.length } } : {};
      ids.push((await call('POST', '/v1/objects', { body })).body.id);
    }
    const newest = [...ids].reverse();
    const all = await call('GET', '/v1/objects');
    assert.deepEqual(
      all.body.data.map((o: any) => o.id),
      newest,
    );
    assert.equal(all.body.object, 'list');
    assert.equal(all.body.has_more, false);

    const p1 = await call('GET', '/v1/objects?limit=3');
    assert.deepEqual(
      p1.body.data.map((o: any) => o.id),
      newest.slice(0, 3),
    );
    assert.equal(p1.body.has_more, true);
    const p2 = await call('GET', `/v1/objects?limit=3&starting_after=${newest[2]}`);
    assert.deepEqual(
      p2.body.data.map((o: any) => o.id),
      newest.slice(3),
    );
    assert.equal(p2.body.has_more, false);

    const a = await call('GET', '/v1/objects?metadata[effect_id]=A');
    assert.deepEqual(
      a.body.data.map((o: any) => o.id),
      [ids[2], ids[0]],
    );
    const an = await call('GET', `/v1/objects?${encodeURIComponent('metadata[effect_id]')}=A&metadata[n]=0`);
    assert.deepEqual(
      an.body.data.map((o: any) => o.id),
      [ids[0]],
    );
    assert.deepEqual((await call('GET', '/v1/objects?metadata[effect_id]=Z')).body.data, []);

    for (const q of ['limit=0', 'limit=101', 'limit=x', 'starting_after=obj_missing']) {
      assert.equal((await call('GET', `/v1/objects?${q}`)).status, 400, q);
    }
    assert.equal((await call('GET', '/v1/objects?limit=100')).status, 200);
  });

  test('unknown object is 404 resource_missing', async () => {
    const res = await call('GET', '/v1/objects/obj_missing');
    assert.equal(res.status, 404);
    assert.equal(res.body.error.type, 'invalid_request_error');
    assert.equal(res.body.error.code, 'resource_missing');
  });
});

describe('key retention', () => {
  test('an expired key is forgotten and a retry creates a NEW object', async () => {
    const short = await startSimulator(['--key-retention-ms', '200']);
    try {
      const req = client(() => short.url);
      const k = key();
      const first = await req('POST', '/v1/objects', { body: { amount: 9 }, headers: withKey(k) });
      assert.equal((await req('GET', `/v1/idempotency_keys/${k}`)).status, 200);
      await waitFor(async () => (await req('GET', `/v1/idempotency_keys/${k}`)).status === 404);
      const second = await req('POST', '/v1/objects', { body: { amount: 9 }, headers: withKey(k) });
      assert.equal(second.status, 200);
      assert.equal(second.headers.get('idempotent-replayed'), null);
      assert.notEqual(second.body.id, first.body.id);
      assert.equal((await req('GET', '/_control/stats')).body.objects, 2);
    } finally {
      await short.stop();
    }
  });

  test('retention can be changed at runtime and applies to existing keys; reset restores it', async () => {
    const k = key();
    const first = await call('POST', '/v1/objects', { body: { amount: 1 }, headers: withKey(k) });
    const set = await call('POST', '/_control/retention', { body: { keyRetentionMs: 0 } });
    assert.deepEqual(set.body, { keyRetentionMs: 0 });
    assert.equal((await call('GET', `/v1/idempotency_keys/${k}`)).status, 404);
    const second = await call('POST', '/v1/objects', { body: { amount: 1 }, headers: withKey(k) });
    assert.notEqual(second.body.id, first.body.id);
    await call('POST', '/_control/reset');
    assert.deepEqual((await call('GET', '/_control/retention')).body, { keyRetentionMs: 86_400_000 });
  });
});

describe('faults', () => {
  test('fail_before_commit: connection dies, nothing stored', async () => {
    const k = key();
    await fault({ kind: 'fail_before_commit' });
    await assert.rejects(call('POST', '/v1/objects', { body: { amount: 2 }, headers: withKey(k) }));
    assert.deepEqual(await stats(), {
      posts: { '/v1/objects': 1, '/social/v1/posts': 0 },
      objects: 0,
      socialPosts: 0,
      keys: 0,
    });
    const retry = await call('POST', '/v1/objects', { body: { amount: 2 }, headers: withKey(k) });
    assert.equal(retry.status, 200);
    assert.equal(retry.headers.get('idempotent-replayed'), null);
  });

  test('drop_after_commit: connection dies, but the object and key were committed', async () => {
    const k = key();
    await fault({ kind: 'drop_after_commit', path: '/v1/objects' });
    await assert.rejects(call('POST', '/v1/objects', { body: { amount: 2 }, headers: withKey(k) }));
    const record = (await call('GET', `/v1/idempotency_keys/${k}`)).body;
    assert.equal(record.status, 'completed');
    const retry = await call('POST', '/v1/objects', { body: { amount: 2 }, headers: withKey(k) });
    assert.equal(retry.headers.get('idempotent-replayed'), 'true');
    assert.equal(retry.body.id, record.object_id);
    assert.equal((await stats()).objects, 1);
  });

  test('delay_after_commit: committed at once, answer comes after delayMs', async () => {
    const k = key();
    await fault({ kind: 'delay_after_commit', delayMs: 5000 });
    await assert.rejects(
      call('POST', '/v1/objects', { body: { amount: 2 }, headers: withKey(k), signal: AbortSignal.timeout(100) }),
    );
    assert.equal((await call('GET', `/v1/idempotency_keys/${k}`)).body.status, 'completed');
    assert.equal((await stats()).objects, 1);

    await fault({ kind: 'delay_after_commit', delayMs: 200 });
    const started = Date.now();
    const res = await call('POST', '/v1/objects', { body: { amount: 3 } });
    assert.equal(res.status, 200);
    assert.ok(Date.now() - started >= 190);
  });

  test('delay_before_commit: nothing stored and key in flight during the wait (held until released)', async () => {
    const k = key();
    await fault({ kind: 'delay_before_commit', delayMs: 600_000 });
    const pending = call('POST', '/v1/objects', { body: { amount: 2 }, headers: withKey(k) });
    await waitFor(async () => (await call('GET', `/v1/idempotency_keys/${k}`)).body?.status === 'in_flight');
    assert.equal((await stats()).objects, 0);
    assert.deepEqual((await call('GET', '/_control/delays')).body, { held: 1 });
    assert.deepEqual((await call('POST', '/_control/release-delays')).body, { released: 1 });
    assert.equal((await pending).status, 200);
    assert.equal((await stats()).objects, 1);
  });

  test('status_429_before_commit: 429 with Retry-After, nothing stored', async () => {
    const k = key();
    await fault({ kind: 'status_429_before_commit', path: '/v1/objects' });
    const res = await call('POST', '/v1/objects', { body: { amount: 2 }, headers: withKey(k) });
    assert.equal(res.status, 429);
    assert.equal(res.headers.get('retry-after'), '1');
    assert.equal((await stats()).objects, 0);
    assert.equal((await call('POST', '/v1/objects', { body: { amount: 2 }, headers: withKey(k) })).status, 200);
  });

  test('status_500_after_commit: 500 although committed; a keyed retry replays the object', async () => {
    const k = key();
    await fault({ kind: 'status_500_after_commit' });
    const res = await call('POST', '/v1/objects', { body: { amount: 2 }, headers: withKey(k) });
    assert.equal(res.status, 500);
    assert.equal(res.body.error.type, 'api_error');
    assert.equal((await stats()).objects, 1);
    const retry = await call('POST', '/v1/objects', { body: { amount: 2 }, headers: withKey(k) });
    assert.equal(retry.status, 200);
    assert.equal(retry.headers.get('idempotent-replayed'), 'true');
  });

  test('status_503_before_commit: 503 with Retry-After, nothing stored', async () => {
    const k = key();
    await fault({ kind: 'status_503_before_commit' });
    const res = await call('POST', '/v1/objects', { body: { amount: 2 }, headers: withKey(k) });
    assert.equal(res.status, 503);
    assert.equal(res.headers.get('retry-after'), '1');
    assert.equal((await stats()).objects, 0);
    assert.equal((await call('GET', `/v1/idempotency_keys/${k}`)).status, 404);
    const retry = await call('POST', '/v1/objects', { body: { amount: 2 }, headers: withKey(k) });
    assert.equal(retry.status, 200);
    assert.equal(retry.headers.get('idempotent-replayed'), null);
  });

  test('faults are FIFO, matched by path prefix, counted, listable and clearable', async () => {
    await fault({ kind: 'status_503_before_commit', path: '/social/v1/posts' });
    await fault({ kind: 'status_500_after_commit' });
    assert.equal((await call('POST', '/v1/objects', { body: {} })).status, 500); // skips the social-only fault
    assert.equal((await call('POST', '/social/v1/posts', { body: { text: 'x' } })).status, 503);
    assert.equal((await call('POST', '/v1/objects', { body: {} })).status, 200);

    await fault({ kind: 'status_503_before_commit', path: '/v1', count: 2 });
    assert.equal((await call('POST', '/social/v1/posts', { body: { text: 'x' } })).status, 200);
    assert.equal((await call('POST', '/v1/objects', { body: {} })).status, 503);
    assert.equal((await call('GET', '/_control/faults')).body.faults.length, 1);
    assert.deepEqual((await call('DELETE', '/_control/faults')).body, { cleared: 1 });
    assert.equal((await call('POST', '/v1/objects', { body: {} })).status, 200);
    assert.deepEqual((await stats()).posts, { '/v1/objects': 4, '/social/v1/posts': 2 });
  });

  test('bad control input is a 400 with a message', async () => {
    const bad = [
      { kind: 'explode' },
      { kind: 'delay_after_commit', delayMs: -1 },
      { kind: 'fail_before_commit', count: 0 },
      { kind: 'fail_before_commit', path: 'v1/objects' },
      { kind: 'fail_before_commit', surprise: true },
      [],
    ];
    for (const body of bad) {
      const res = await call('POST', '/_control/faults', { body });
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.match(res.body.error.message, /Invalid control request/);
    }
    assert.equal((await call('POST', '/_control/faults', { raw: '{nope' })).status, 400);
    assert.equal((await call('POST', '/_control/retention', { body: { keyRetentionMs: -5 } })).status, 400);
    assert.equal((await call('POST', '/_control/retention', { body: { keyRetentionMs: '1' } })).status, 400);
    assert.equal((await call('GET', '/_control/faults')).body.faults.length, 0);
  });

  test('reset clears everything', async () => {
    await call('POST', '/v1/objects', { body: {}, headers: withKey(key()) });
    await call('POST', '/social/v1/posts', { body: { text: 'x' } });
    await fault({ kind: 'fail_before_commit' });
    await call('POST', '/_control/reset');
    assert.deepEqual(await stats(), {
      posts: { '/v1/objects': 0, '/social/v1/posts': 0 },
      objects: 0,
      socialPosts: 0,
      keys: 0,
    });
    assert.equal((await call('GET', '/_control/faults')).body.faults.length, 0);
  });
});

describe('request log', () => {
  const sha = (body: object) => createHash('sha256').update(JSON.stringify(body)).digest('hex');
  const requests = async (query = '') => (await call('GET', `/_control/requests${query}`)).body.requests;

  test('records every API request: arrival, method, path, key, body hash, effect ID, fault and answer; not control calls', async () => {
    const k = key();
    const body = { amount: 5, metadata: { effect_id: 'e-log' } };
    const first = await call('POST', '/v1/objects', { body, headers: withKey(k) });
    const replay = await call('POST', '/v1/objects', { body, headers: withKey(k) });
    await fault({ kind: 'fail_before_commit', path: '/social/v1/posts' });
    await assert.rejects(call('POST', '/social/v1/posts', { body: { text: 'hi' } }));
    await call('GET', `/v1/objects/${first.body.id}`);
    const log = await requests();
    assert.equal(log.length, 4, JSON.stringify(log));
    assert.deepEqual(
      log.map((r: any) => [r.method, r.path, r.idempotencyKey, r.fault, r.fate, r.status]),
      [
        ['POST', '/v1/objects', k, null, 'answered', 200],
        ['POST', '/v1/objects', k, null, 'answered', 200],
        ['POST', '/social/v1/posts', null, 'fail_before_commit', 'dropped', null],
        ['GET', `/v1/objects/${first.body.id}`, null, null, 'answered', 200],
      ],
    );
    assert.equal(log[0].bodySha256, sha(body));
    assert.equal(log[0].effectId, 'e-log');
    assert.equal(log[0].objectId, first.body.id);
    assert.equal(log[0].replayed, false);
    assert.equal(log[1].replayed, true);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.equal(log[1].objectId, first.body.id);
    assert.equal(log[2].bodySha256, sha({ text: 'hi' }), 'a dropped request still has its body hash');
    assert.ok(log.every((r: any, i: number) => r.seq > (log[i - 1]?.seq ?? 0) && !Number.isNaN(Date.parse(r.at))));
    assert.ok(Date.parse(log[0].settledAt) >= Date.parse(log[0].at));
    assert.deepEqual(
      (await requests('?method=POST&path=/v1/objects')).map((r: any) => r.seq),
      [log[0].seq, log[1].seq],
    );
    assert.deepEqual(
      (await requests(`?since=${log[2].seq}`)).map((r: any) => r.seq),
      [log[3].seq],
    );
    assert.equal((await call('GET', '/_control/requests?bogus=1')).status, 400);
    assert.deepEqual((await call('DELETE', '/_control/requests')).body, { cleared: 4 });
    assert.deepEqual(await requests(), []);
  });

  test('an answer held past the client giving up is logged when it would have gone out; 409 and 500-after-commit are logged with what they named', async () => {
    const k = key();
    await fault({ kind: 'delay_after_commit', delayMs: 600_000, path: '/v1/objects' });
    await assert.rejects(
      call('POST', '/v1/objects', { body: { amount: 2 }, headers: withKey(k), signal: AbortSignal.timeout(300) }),
    );
    const [held] = await requests();
    assert.equal(held.fate, 'pending');
    assert.ok(held.objectId, 'committed: the object is named before the answer goes out');
    assert.deepEqual((await call('POST', '/_control/release-delays')).body, { released: 1 });
    await waitFor(async () => (await requests())[0].fate !== 'pending');
    const [late] = await requests();
    assert.deepEqual([late.fate, late.status, late.objectId], ['client_gone', 200, held.objectId]);

    await fault({ kind: 'delay_before_commit', delayMs: 600_000, path: '/v1/objects' });
    const k2 = key();
    const slow = call('POST', '/v1/objects', { body: { amount: 3 }, headers: withKey(k2) });
    await waitFor(async () => (await call('GET', `/v1/idempotency_keys/${k2}`)).body?.status === 'in_flight');
    const conflict = await call('POST', '/v1/objects', { body: { amount: 3 }, headers: withKey(k2) });
    assert.equal(conflict.status, 409);
    await call('POST', '/_control/release-delays');
    assert.equal((await slow).status, 200);
    await fault({ kind: 'status_500_after_commit' });
    const failed = await call('POST', '/v1/objects', { body: { amount: 4 }, headers: withKey(key()) });
    assert.equal(failed.status, 500);
    const log = await requests('?method=POST');
    const in409 = log.find((r: any) => r.status === 409);
    assert.deepEqual([in409.errorType, in409.errorCode], ['idempotency_error', 'idempotency_key_in_use']);
    const in500 = log.at(-1);
    assert.deepEqual([in500.fault, in500.status, in500.errorType], ['status_500_after_commit', 500, 'api_error']);
    assert.match(in500.objectId, /^obj_/, 'the object committed before the 500 is named');
  });

  test('reset clears the log; crowding the social feed is one control call that logs no API request', async () => {
    await call('POST', '/social/v1/posts', { body: { text: 'mine', metadata: { effect_id: 'e-mine' } } });
    const crowd = await call('POST', '/_control/social-posts', { body: { count: 100 } });
    assert.deepEqual(crowd.body, { added: 100, socialPosts: 101 });
    assert.equal((await requests()).length, 1);
    const listed = (await call('GET', '/social/v1/posts?page_size=50')).body.data;
    assert.ok(listed.every((p: any) => p.metadata?.effect_id !== 'e-mine'));
    assert.equal((await call('POST', '/_control/social-posts', { body: { count: 0 } })).status, 400);
    await call('POST', '/_control/reset');
    assert.deepEqual(await requests(), []);
  });
});

describe('key-less API', () => {
  test('every POST creates a new post, even with the same Idempotency-Key', async () => {
    const k = key();
    const body = { text: 'hello', metadata: { effect_id: 'e1' } };
    const a = await call('POST', '/social/v1/posts', { body, headers: withKey(k) });
    const b = await call('POST', '/social/v1/posts', { body, headers: withKey(k) });
    for (const res of [a, b]) {
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('idempotent-replayed'), null);
      assert.match(res.body.id, /^post_[A-Za-z0-9]+$/);
      assert.equal(res.body.text, 'hello');
      assert.deepEqual(res.body.metadata, { effect_id: 'e1' });
      assert.deepEqual(res.body.request, body);
    }
    assert.notEqual(a.body.id, b.body.id);
    assert.equal(a.body.body_sha256, b.body.body_sha256);
    assert.deepEqual((await call('GET', `/social/v1/posts/${a.body.id}`)).body, a.body);
    assert.deepEqual(await stats(), {
      posts: { '/v1/objects': 0, '/social/v1/posts': 2 },
      objects: 0,
      socialPosts: 2,
      keys: 0,
    });
  });

  test('missing or non-string text is a 422 validation_error; unknown post is 404', async () => {
    for (const body of [{}, { text: 5 }, { text: null }]) {
      const res = await call('POST', '/social/v1/posts', { body });
      assert.equal(res.status, 422);
      assert.equal(res.body.error.type, 'validation_error');
    }
    assert.equal((await call('POST', '/social/v1/posts', { body: { text: 'x', amount: -1 } })).status, 200);
    assert.equal((await call('GET', '/social/v1/posts/post_missing')).status, 404);
  });

  test('a fault with crowd: others post that many times after ours is stored, before its answer; ours is out of the listing', async () => {
    await fault({ kind: 'delay_after_commit', path: '/social/v1/posts', delayMs: 5000, crowd: 100 });
    await assert.rejects(
      call('POST', '/social/v1/posts', { body: { text: 'ours' }, signal: AbortSignal.timeout(300) }),
    );
    const listed: string[] = [];
    let cursor: string | null = null;
    do {
      const q: string = cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`;
      const page: Res = await call('GET', `/social/v1/posts?page_size=50${q}`);
      listed.push(...page.body.data.map((p: any) => p.text));
      cursor = page.body.next_cursor;
    } while (cursor !== null);
    assert.equal(listed.length, 100);
    assert.ok(!listed.includes('ours'), 'ours is past the newest 100');
    assert.equal((await call('GET', '/social/v1/posts?page_size=1')).body.data[0].text, "someone else's post 99");
  });

  test('listing only reaches the newest 100 posts', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 105; i++)
      ids.push((await call('POST', '/social/v1/posts', { body: { text: `post ${i}` } })).body.id);

    const first = await call('GET', '/social/v1/posts');
    assert.equal(first.body.data.length, 20);
    assert.equal(first.body.data[0].id, ids[104]);

    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const q: string = cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`;
      const page: Res = await call('GET', `/social/v1/posts?page_size=50${q}`);
      assert.equal(page.status, 200);
      seen.push(...page.body.data.map((p: any) => p.id));
      cursor = page.body.next_cursor;
    } while (cursor !== null);
    assert.deepEqual(seen, ids.slice(5).reverse());
    for (const hidden of ids.slice(0, 5)) assert.equal((await call('GET', `/social/v1/posts/${hidden}`)).status, 200);

    for (const q of ['page_size=0', 'page_size=51', 'cursor=garbage']) {
      assert.equal((await call('GET', `/social/v1/posts?${q}`)).status, 400, q);
    }
  });
});

describe('rate limit and traffic counter', () => {
  test('above R requests a second: 429 with Retry-After, nothing created; the counter says so per second', async () => {
    const set = await call('POST', '/_control/rate-limit', { body: { requestsPerSecond: 5, retryAfterSeconds: 2 } });
    assert.equal(set.status, 200);
    assert.deepEqual(set.body, { requestsPerSecond: 5, retryAfterSeconds: 2 });
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, n) =>
        n % 2 ? call('GET', `/v1/objects/obj_missing${n}`) : call('POST', '/v1/objects', { body: { amount: 1 } }),
      ),
    );
    const limited = answers.filter((a) => a.status === 429);
    // 20 at once land in one window, or two when they straddle a second: at most 10 get through.
    assert.ok(limited.length >= 10, `429s: ${limited.length}`);
    for (const a of limited) {
      assert.equal(a.headers.get('retry-after'), '2');
      assert.equal(a.body.error.type, 'rate_limit_error');
    }
    const created = answers.filter((a) => a.status === 200).length;
    assert.equal((await stats()).objects, created, 'a limited POST creates nothing');
    const traffic = (await call('GET', '/_control/traffic')).body;
    assert.deepEqual(traffic.totals, { reads: 10, writes: 10, limited: limited.length });
    for (const second of traffic.seconds) assert.ok(second.reads + second.writes - second.limited <= 5);
    assert.equal(
      traffic.seconds.reduce((n: number, s: any) => n + (s.readsByPath['/v1/objects'] ?? 0), 0),
      10,
      'reads counted by path',
    );
    // Control requests never count, and lifting the limit lets everything through.
    await call('POST', '/_control/rate-limit', { body: { requestsPerSecond: null } });
    assert.equal((await call('GET', '/v1/objects')).status, 200);
    assert.equal((await call('POST', '/_control/rate-limit', { body: { requestsPerSecond: 0 } })).status, 400);
    await call('POST', '/_control/reset');
    assert.deepEqual((await call('GET', '/_control/traffic')).body.totals, { reads: 0, writes: 0, limited: 0 });
  });
});

describe('process lifecycle', () => {
  test('exits by itself when stdin reaches EOF', async () => {
    const child = await startSimulator();
    child.child.stdin!.end();
    const [code] = await once(child.child, 'exit');
    assert.equal(code, 0);
  });

  test('--no-exit-on-stdin-close keeps serving after EOF; SIGTERM stops it despite a parked request', async () => {
    const child = await startSimulator(['--no-exit-on-stdin-close']);
    const req = client(() => child.url);
    child.child.stdin!.end();
    await new Promise((r) => setTimeout(r, 200)); // give a wrong EOF handler the chance to fire
    assert.equal((await req('GET', '/_control/stats')).status, 200);
    await req('POST', '/_control/faults', { body: { kind: 'delay_after_commit', delayMs: 60_000 } });
    const parked = assert.rejects(req('POST', '/v1/objects', { body: {} })); // handled now: it fails mid-test
    await waitFor(async () => (await req('GET', '/_control/stats')).body.objects === 1);
    const started = Date.now();
    child.child.kill('SIGTERM');
    const [code] = await once(child.child, 'exit');
    assert.equal(code, 0);
    assert.ok(Date.now() - started < 5000, 'close() must not wait for the parked response');
    await parked;
  });
});
