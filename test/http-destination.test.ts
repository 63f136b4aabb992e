// The declarative HTTP destination against the real provider simulator (no Temporal): keyed-api, declared as
// data, carries the API's contract — a replayed response for a key it knows, 400 for a key back with other
// parameters, 409 while the key is in flight — and reads back by key, then by the stamped reference once the
// key is forgotten. A declaration whose API keeps no body hash computes it from the object's fields.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, beforeEach, describe, test } from 'node:test';
import { checkedReadback, checkedSend, readbackErrorVerdict, sendErrorOutcome } from '../activities/crossing-checks.js';
import {
  type HttpDestinationSpec,
  httpAdapter,
  type ListingReadback,
  type ReferenceReadback,
  valueAt,
} from '../activities/destinations/http-destination.js';
import { bodySha256Of } from '../activities/destinations/index.js';
import { keyedApi, keyedApiSpec } from '../activities/destinations/keyed-api.js';
import { socialFeed, socialFeedSpec } from '../activities/destinations/social-feed.js';
import { DestinationResponseError } from '../domain/destination.js';
import type { DestinationAdapter, ReadbackRequest } from '../domain/destination-contract.js';
import { postRequest } from '../harness/sample-requests.js';
import { type SimulatorProcess, startSimulator } from '../harness/simulator/client.js';
import { waitFor } from '../stack/wait-for.js';

function sendable(adapter: DestinationAdapter, reference: string, payload: Record<string, unknown>) {
  const pkg = adapter.buildPackage(reference, 'task.create', payload);
  const readback: ReadbackRequest = {
    effectId: reference,
    idempotencyKey: reference,
    package: pkg,
    bodySha256: bodySha256Of(pkg.body),
    since: new Date(Date.now() - 60_000).toISOString(),
  };
  return {
    send: { effectId: reference, idempotencyKey: reference, operation: 'task.create', package: pkg, timeoutMs: 5000 },
    readback,
  };
}

describe('the declarative HTTP destination against the simulator', () => {
  let simulator: SimulatorProcess;
  let keyed: DestinationAdapter;
  before(async () => {
    simulator = await startSimulator();
    keyed = keyedApi(simulator.url);
  });
  beforeEach(() => simulator.reset());
  after(() => simulator?.stop());

  test('replayed for a known key; 400 for the key with other parameters; 409 while it is in flight', async () => {
    const first = sendable(keyed, 'task:H-1', { title: 'Prepare preview', request: 'h-1' });
    const created = await keyed.send(first.send);
    assert.equal(created.class, 'confirmed');
    const again = await keyed.send(first.send);
    assert.equal(again.class, 'confirmed');
    assert.equal(again.class === 'confirmed' && again.detail.replayed, true);
    assert.equal(again.class === 'confirmed' && again.externalId, created.class === 'confirmed' && created.externalId);

    const changed = sendable(keyed, 'task:H-1', { title: 'Prepare preview, changed', request: 'h-1' });
    const reused = await keyed.send(changed.send);
    assert.equal(reused.class, 'rejected', JSON.stringify(reused));
    assert.equal(reused.httpStatus, 400);

    await simulator.fault('delay_before_commit', { path: '/v1/objects', delayMs: 600_000 });
    const held = sendable(keyed, 'task:H-2', { title: 'Held', request: 'h-2' });
    const inFlight = keyed.send({ ...held.send, timeoutMs: 60_000 });
    // The held request has the key in flight: readback says so, and a second request meets 409.
    const read = await waitFor(async () => {
      const seen = await keyed.readBack(held.readback);
      return seen.outcome === 'inconclusive' ? seen : undefined;
    }, 'the provider to hold the key in flight');
    assert.equal(read.outcome, 'inconclusive');
    assert.equal(read.detail.method, 'idempotency_key');
    const concurrent = await keyed.send(held.send);
    assert.equal(concurrent.class, 'unknown', JSON.stringify(concurrent));
    assert.equal(concurrent.httpStatus, 409);
    await simulator.releaseDelays();
    assert.equal((await inFlight).class, 'confirmed');
    assert.equal((await simulator.objects()).length, 2);
  });

  test('readback: by key while the provider remembers it, then by the stamped reference; absent over complete coverage', async () => {
    const ours = sendable(keyed, 'task:H-3', { title: 'Prepare preview', request: 'h-3' });
    const created = await keyed.send(ours.send);
    assert.equal(created.class, 'confirmed');
    const byKey = await keyed.readBack(ours.readback);
    assert.equal(byKey.outcome, 'found');
    assert.equal(byKey.detail.method, 'idempotency_key');
    await simulator.setRetention(1);
    // Once the key is forgotten, the stamped reference finds the object.
    const byReference = await waitFor(async () => {
      const seen = await keyed.readBack(ours.readback);
      return seen.detail.method === 'metadata_search' ? seen : undefined;
    }, 'the key to be forgotten');
    assert.equal(byReference.outcome, 'found');
    assert.equal(byReference.detail.method, 'metadata_search');
    assert.equal(
      byReference.outcome === 'found' && byReference.externalId,
      created.class === 'confirmed' && created.externalId,
    );
    const other = sendable(keyed, 'task:H-4', { title: 'Never sent', request: 'h-4' });
    const absent = await keyed.readBack(other.readback);
    assert.equal(absent.outcome, 'absent');
    assert.equal(absent.coverage, 'complete');
    // Our reference with another body is a person's to judge, never absence.
    const foreign = await keyed.readBack({ ...ours.readback, bodySha256: bodySha256Of({ other: true }) });
    assert.equal(foreign.outcome, 'inconclusive');
  });

  test('an API that keeps no body hash: the declaration computes it from the object, and still tells bodies apart', async () => {
    const computed = httpAdapter(
      { ...keyedApiSpec, object: { ...keyedApiSpec.object, bodySha256: (o) => bodySha256Of(valueAt(o, 'request')) } },
      { baseUrl: simulator.url },
    );
    const ours = sendable(computed, 'task:H-5', { title: 'Prepare preview', request: 'h-5' });
    const created = await computed.send(ours.send);
    assert.equal(created.class, 'confirmed');
    assert.equal((await computed.readBack(ours.readback)).outcome, 'found');
    const seen = await computed.lookup(created.class === 'confirmed' ? created.externalId : '', ours.readback);
    assert.equal(seen.exists && seen.matchesRelease, true);
    const otherBody = await computed.lookup(created.class === 'confirmed' ? created.externalId : '', {
      ...ours.readback,
      bodySha256: bodySha256Of({ title: 'Prepare preview' }),
    });
    assert.equal(otherBody.exists && otherBody.matchesRelease, false);
  });

  test('a redirect is answered, never followed: unknown, and the request went once', async () => {
    let requests = 0;
    const redirecting = createServer((req, res) => {
      requests += 1;
      req.resume();
      res.writeHead(307, { location: '/elsewhere' }).end();
    });
    await new Promise<void>((resolve) => redirecting.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = redirecting.address() as AddressInfo;
      const moved = keyedApi(`http://127.0.0.1:${port}`);
      const sent = await moved.send(sendable(moved, 'task:H-6', { title: 'Moved', request: 'h-6' }).send);
      assert.equal(sent.class, 'unknown', JSON.stringify(sent));
      assert.equal(requests, 1);
    } finally {
      redirecting.close();
    }
  });

  test('a matched object with no ID at object.id is not "found": a typed error naming object.id, and nothing with an empty ID crosses into the ledger', async () => {
    const { idempotencyKey: _, plans: __, ...keyless } = keyedApiSpec;
    const idless = httpAdapter(
      { ...keyless, object: { ...keyedApiSpec.object, id: 'provider_id' }, readback: [keyedApiSpec.readback[1]!] },
      { baseUrl: simulator.url },
    );
    const ours = sendable(idless, 'task:I-1', { title: 'No ID', request: 'i-1' });
    const sent = await idless.send(ours.send);
    // Made, but its answer names no ID: unknown, never confirmed with ''.
    assert.equal(sent.class, 'unknown', JSON.stringify(sent));
    assert.equal((await simulator.objects()).length, 1);
    const thrown = await idless.readBack(ours.readback).then(
      (read) => assert.fail(`read back as ${JSON.stringify(read)}`),
      (error: unknown) => error,
    );
    assert.ok(thrown instanceof DestinationResponseError, String(thrown));
    assert.equal(thrown.field, 'object.id');
    const verdict = readbackErrorVerdict(thrown);
    assert.equal(verdict?.outcome, 'inconclusive');
    assert.equal(verdict?.detail.unreadable, 'object.id');
    // A hand-written adapter's "found" without an ID, or "absent" over partial coverage, crosses as inconclusive.
    const found = checkedReadback({
      outcome: 'found',
      coverage: 'complete',
      externalId: '',
      occurredAt: new Date().toISOString(),
      detail: { method: 'by-hand', reason: 'matched' },
    });
    assert.equal(found.outcome, 'inconclusive');
    assert.equal(found.detail.unreadable, 'externalId');
    const partial = checkedReadback({
      outcome: 'absent',
      coverage: 'partial' as 'complete',
      detail: { method: 'by-hand', reason: 'first page only' },
    });
    assert.equal(partial.outcome, 'inconclusive');
    assert.equal(partial.detail.unreadable, 'coverage');
  });

  test('a listing with an old item pinned to its first page, from a provider whose clock runs 10 s behind: the scan goes on to the page holding ours', async () => {
    const since = Date.now() - 2000;
    const at = (ms: number) => new Date(ms).toISOString();
    const feed = httpAdapter(
      {
        ...socialFeedSpec,
        readback: [{ ...(socialFeedSpec.readback[0] as ListingReadback), listedAtMost: undefined }],
      },
      { baseUrl: 'http://127.0.0.1:1' },
    );
    const reference = 'post:L-1';
    const pkg = feed.buildPackage(reference, 'post.publish', postRequest(reference, 'Pinned feed').payload);
    const other = (id: string, created: number) => ({
      id,
      created_at: at(created),
      body_sha256: 'x',
      metadata: {},
    });
    // Page 1: posts made after our attempt, stamped 10 s behind our clock, and a post pinned a day ago.
    // Page 2: ours (made after the attempt, stamped 9 s before it), then older posts.
    const pages: Record<string, unknown> = {
      first: {
        data: [
          other('post_new1', since - 8000),
          other('post_new2', since - 8500),
          other('post_pin', since - 86_400_000),
        ],
        next_cursor: 'second',
      },
      second: {
        data: [
          {
            id: 'post_ours',
            created_at: at(since - 9000),
            body_sha256: bodySha256Of(pkg.body),
            metadata: { effect_id: reference },
          },
          other('post_old', since - 3_600_000),
        ],
        next_cursor: null,
      },
    };
    const listing = createServer((req, res) => {
      const cursor = new URL(req.url ?? '/', 'http://x').searchParams.get('cursor') ?? 'first';
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(pages[cursor]));
    });
    await new Promise<void>((resolve) => listing.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = listing.address() as AddressInfo;
      const served = httpAdapter(
        {
          ...socialFeedSpec,
          readback: [{ ...(socialFeedSpec.readback[0] as ListingReadback), listedAtMost: undefined }],
        },
        { baseUrl: `http://127.0.0.1:${port}` },
      );
      const read = await served.readBack({
        effectId: reference,
        idempotencyKey: reference,
        package: pkg,
        bodySha256: bodySha256Of(pkg.body),
        since: at(since),
      });
      assert.equal(read.outcome, 'found', JSON.stringify(read));
      assert.equal(read.outcome === 'found' && read.externalId, 'post_ours');
    } finally {
      listing.close();
    }
  });

  test("Stripe's search shape: pages by an opaque next_page token, and a search that lags writes is declared with its lag", async () => {
    const { idempotencyKey: _, plans: __, ...keyless } = keyedApiSpec;
    const search: ReferenceReadback = {
      by: 'reference',
      path: "/v1/objects/search?limit=1&query=metadata['effect_id']:'{reference}'",
      items: 'data',
      hasMore: 'has_more',
      nextPage: 'next_page',
      cursorParam: 'page',
      lagMs: 5000,
    };
    const stripeLike = httpAdapter(
      {
        ...keyless,
        object: { ...keyedApiSpec.object, createdAt: { path: 'created', format: 'epoch-seconds' } },
        readback: [search],
        absenceGraceMs: 6000,
      },
      { baseUrl: simulator.url },
    );
    const ours = sendable(stripeLike, 'task:S-1', { title: 'Refund', request: 's-1' });
    assert.equal((await stripeLike.send(ours.send)).class, 'confirmed');
    // A look-alike carrying our reference with another body, made after ours: the first page of one holds it.
    const lookAlike = sendable(stripeLike, 'task:S-1', { title: 'Refund, other body', request: 's-1' });
    assert.equal((await stripeLike.send(lookAlike.send)).class, 'confirmed');
    const read = await stripeLike.readBack(ours.readback);
    assert.equal(read.outcome, 'found', JSON.stringify(read));
    assert.equal(read.detail.scanned, 2, 'the second page came by its token');
    // The search runs 5 s behind writes: right after a write it does not show it (the declared lag covers that).
    await simulator.setSearchLag(5000);
    const late = sendable(stripeLike, 'task:S-2', { title: 'Refund later', request: 's-2' });
    assert.equal((await stripeLike.send(late.send)).class, 'confirmed');
    assert.equal((await stripeLike.readBack(late.readback)).outcome, 'absent');
    await simulator.setSearchLag(0);
    assert.equal((await stripeLike.readBack(late.readback)).outcome, 'found');
  });

  test("send is handed a signal and stops its request when it fires: nothing of ours outlives the call's deadline", async () => {
    await simulator.fault('delay_before_commit', { path: '/v1/objects', delayMs: 600_000 });
    const held = sendable(keyed, 'task:A-1', { title: 'Held', request: 'a-1' });
    const began = Date.now();
    const sent = await keyed.send({ ...held.send, timeoutMs: 60_000, signal: AbortSignal.timeout(300) });
    assert.equal(sent.class, 'unknown', JSON.stringify(sent));
    assert.ok(Date.now() - began < 5000, `stopped at the signal, not the 60 s timeout (${Date.now() - began} ms)`);
    await simulator.releaseDelays();
  });

  test('Retry-After: 0 buys no resend at once: a keyed 429 is not sent, to go again after at least a second', async () => {
    const busy = createServer((req, res) => {
      req.resume();
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '0' }).end('{"error":"slow down"}');
    });
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = busy.address() as AddressInfo;
      const limited = keyedApi(`http://127.0.0.1:${port}`);
      const sent = await limited.send(sendable(limited, 'task:H-8', { title: 'Busy', request: 'h-8' }).send);
      assert.equal(sent.class, 'not_sent', JSON.stringify(sent));
      assert.equal(sent.class === 'not_sent' && sent.retryAfterMs, 1000);
    } finally {
      busy.close();
    }
  });

  test('a 429 to the object its key named repeats that fetch alone after the Retry-After, not the key lookup', async () => {
    const ours = sendable(keyed, 'task:H-9', { title: 'Limited fetch', request: 'h-9' });
    assert.equal((await keyed.send(ours.send)).class, 'confirmed');
    // In front of the simulator: the first GET of an object is answered 429 (Retry-After 1 s), the rest pass.
    let limited = 0;
    const paths: string[] = [];
    const front = createServer(async (req, res) => {
      req.resume();
      paths.push(req.url ?? '');
      if (req.url?.startsWith('/v1/objects/') && limited++ === 0) {
        res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '1' }).end('{"error":"slow down"}');
        return;
      }
      const answer = await fetch(`${simulator.url}${req.url}`);
      res.writeHead(answer.status, { 'content-type': 'application/json' }).end(await answer.text());
    });
    await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = front.address() as AddressInfo;
      let turns = 0;
      const read = await keyedApi(`http://127.0.0.1:${port}`).readBack({
        ...ours.readback,
        beforeRequest: async () => {
          turns++;
        },
      });
      assert.equal(read.outcome, 'found', JSON.stringify(read));
      assert.deepEqual(
        paths.map((p) => p.split('/').slice(0, 3).join('/')),
        ['/v1/idempotency_keys', '/v1/objects', '/v1/objects'],
        'the key once, the object twice',
      );
      assert.equal(turns, 3, 'each request took its turn, the repeated fetch too');
    } finally {
      front.close();
    }
  });

  test('a capped listing that shifts between its pages is never read as complete: a post pushed out meanwhile is not "absent"', async () => {
    const feed = socialFeed(simulator.url);
    const reference = 'post:H-7';
    const pkg = feed.buildPackage(reference, 'post.publish', postRequest(reference, 'Shifting feed').payload);
    const since = new Date(Date.now() - 1000).toISOString();
    const sent = await feed.send({
      effectId: reference,
      idempotencyKey: reference,
      operation: 'post.publish',
      package: pkg,
      timeoutMs: 5000,
    });
    assert.equal(sent.class, 'confirmed', JSON.stringify(sent));
    // Others post 100 times: ours drops out of the newest 100 the listing shows, all of them newer than our attempt.
    await simulator.crowdSocialFeed(100);
    let requests = 0;
    const read = await feed.readBack({
      effectId: reference,
      idempotencyKey: reference,
      package: pkg,
      bodySha256: bodySha256Of(pkg.body),
      since,
      // One more post between the listing's two pages: its window moves, and the second page comes back one short,
      // with no next page, as if the listing had ended.
      beforeRequest: async () => {
        if (++requests === 2) await simulator.crowdSocialFeed(1);
      },
    });
    assert.ok(requests >= 2, 'the readback read two pages');
    assert.equal(read.outcome, 'inconclusive', JSON.stringify(read));
    assert.equal(read.coverage, 'partial');
  });

  test("creation times in the declared format: ISO, unix seconds (Stripe's created), unix ms — each read as the time the API made the object", async () => {
    const formats: Array<[string, HttpDestinationSpec['object']['createdAt']]> = [
      ['iso (a plain path)', 'created_at'],
      ['unix seconds at a plain path (detected)', 'created'],
      ['unix ms at a plain path (detected)', 'created_ms'],
      ['iso', { path: 'created_at', format: 'iso' }],
      ['epoch-seconds', { path: 'created', format: 'epoch-seconds' }],
      ['epoch-ms', { path: 'created_ms', format: 'epoch-ms' }],
    ];
    for (const [i, [format, createdAt]] of formats.entries()) {
      const adapter = httpAdapter(
        { ...keyedApiSpec, plans: {}, object: { ...keyedApiSpec.object, createdAt } },
        { baseUrl: simulator.url },
      );
      const ours = sendable(adapter, `task:T-${i}`, { title: `Timed ${format}`, request: `t-${i}` });
      const sent = await adapter.send(ours.send);
      assert.equal(sent.class, 'confirmed', `${format}: ${JSON.stringify(sent)}`);
      const made = (await simulator.objects()).find((o) => o.id === (sent.class === 'confirmed' && sent.externalId));
      const madeAt = Date.parse(String(made?.created_at));
      // Unix seconds lose the milliseconds; every format names the same second.
      const near = (iso: string) => Math.abs(Date.parse(iso) - madeAt) < 1000 && /^\d{4}-\d{2}-\d{2}T/.test(iso);
      assert.ok(sent.class === 'confirmed' && near(sent.occurredAt), `${format}: send ${JSON.stringify(sent)}`);
      const read = await adapter.readBack(ours.readback);
      assert.ok(read.outcome === 'found' && near(read.occurredAt), `${format}: readback ${JSON.stringify(read)}`);
      const seen = await adapter.lookup(sent.class === 'confirmed' ? sent.externalId : '', ours.readback);
      assert.ok(seen.exists && near(seen.occurredAt), `${format}: lookup ${JSON.stringify(seen)}`);
    }
  });

  test('unix seconds declared as ISO: a typed error naming object.createdAt, which crosses into the ledger as unknown, then inconclusive — never a retry', async () => {
    const misread = httpAdapter(
      { ...keyedApiSpec, plans: {}, object: { ...keyedApiSpec.object, createdAt: { path: 'created', format: 'iso' } } },
      { baseUrl: simulator.url },
    );
    const ours = sendable(misread, 'task:T-9', { title: 'Stripe-shaped', request: 't-9' });
    const thrown = await misread.send(ours.send).then(
      () => assert.fail('the send read "1733…" as a time'),
      (error: unknown) => error,
    );
    assert.ok(thrown instanceof DestinationResponseError, String(thrown));
    assert.equal(thrown.field, 'object.createdAt');
    assert.match(thrown.message, /created: \d+ is not ISO 8601 text/);
    // The object was made once: the send's answer crosses as unknown, the readback's as inconclusive naming the field.
    assert.equal((await simulator.objects()).length, 1);
    const sent = sendErrorOutcome(thrown);
    assert.equal(sent?.class, 'unknown');
    assert.equal(sent?.detail.unreadable, 'object.createdAt');
    const read = await misread.readBack(ours.readback).then(
      () => assert.fail('the readback read "1733…" as a time'),
      (error: unknown) => readbackErrorVerdict(error),
    );
    assert.equal(read?.outcome, 'inconclusive');
    assert.equal(read?.detail.unreadable, 'object.createdAt');
    assert.match(read?.detail.reason ?? '', /obj_/);
    // Seconds declared as milliseconds read as January 1970: refused the same way, not recorded as a fact's time.
    const asMs = httpAdapter(
      {
        ...keyedApiSpec,
        plans: {},
        object: { ...keyedApiSpec.object, createdAt: { path: 'created', format: 'epoch-ms' } },
      },
      { baseUrl: simulator.url },
    );
    await assert.rejects(
      asMs.readBack(ours.readback),
      (error: unknown) => error instanceof DestinationResponseError && /1970-01-/.test(error.message),
    );
    // A hand-written adapter's confirmed answer with unix seconds as text never reaches the ledger either.
    const checked = checkedSend({
      class: 'confirmed',
      httpStatus: 200,
      externalId: 'obj_1',
      occurredAt: '1733400000',
      detail: { reason: 'created' },
    });
    assert.equal(checked.class, 'unknown');
    assert.equal(checked.detail.unreadable, 'occurredAt');
  });
});
