// Destination adapters against the real provider simulator (no Temporal): how they classify what the
// provider answered, and how they resolve a URL a human typed to the object it names.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { keyedApi } from '../activities/destinations/keyed-api.js';
import { socialFeed } from '../activities/destinations/social-feed.js';
import type { DestinationAdapter, ReadbackRequest } from '../domain/destination-contract.js';
import { type SimulatorProcess, startSimulator } from '../harness/simulator/client.js';
import { canonicalJson, sha256Hex } from '../ledger/fingerprint.js';

function sendable(adapter: DestinationAdapter, effectId: string, operation: string, payload: Record<string, unknown>) {
  const pkg = adapter.buildPackage(effectId, operation, payload);
  const readback: ReadbackRequest = {
    effectId,
    idempotencyKey: effectId,
    package: pkg,
    bodySha256: sha256Hex(canonicalJson(pkg.body)),
    since: new Date(Date.now() - 60_000).toISOString(),
  };
  return { send: { effectId, idempotencyKey: effectId, operation, package: pkg, timeoutMs: 5000 }, readback };
}

describe('destination adapters against the simulator', () => {
  let simulator: SimulatorProcess;
  let keyed: DestinationAdapter;
  let social: DestinationAdapter;
  before(async () => {
    simulator = await startSimulator();
    keyed = keyedApi(simulator.url);
    social = socialFeed(simulator.url);
  });
  after(() => simulator?.stop());

  test('a 503 or 429 from the key-less social feed is unknown, not "not applied"; keyed-api keeps 503 + Retry-After as not sent', async () => {
    for (const [fault, status] of [
      ['status_503_before_commit', 503],
      ['status_429_before_commit', 429],
    ] as const) {
      await simulator.fault(fault, { path: '/social/v1/posts' });
      const post = sendable(social, `post:${status}`, 'post.publish', { channel: 'c', text: 'hello' });
      const posted = await social.send(post.send);
      assert.equal(posted.class, 'unknown', JSON.stringify(posted));
      assert.equal(posted.httpStatus, status);
    }

    await simulator.fault('status_503_before_commit', { path: '/v1/objects' });
    const task = sendable(keyed, 'task:503', 'task.create', { title: 'Prepare preview', request: 'r-503' });
    const sent = await keyed.send(task.send);
    assert.equal(sent.class, 'not_sent', JSON.stringify(sent));
    assert.equal(sent.class === 'not_sent' && sent.retryAfterMs, 1000);
    assert.equal((await keyed.send(task.send)).class, 'confirmed', 'the same key goes through afterwards');
  });

  test('a URL resolves to the object it names, only in the destination’s own URL shapes', () => {
    const base = simulator.url;
    const cases: Array<[DestinationAdapter, string, string | null]> = [
      [keyed, `${base}/v1/objects/obj_1`, 'obj_1'],
      [keyed, `${base}/v1/objects/obj_1/`, 'obj_1'],
      [keyed, `${base}/v1/objects/obj_1?expand=x#top`, 'obj_1'],
      [keyed, `${base}/v1/objects/obj%201`, 'obj 1'],
      [keyed, `${base}/v1/objects/`, null],
      [keyed, `${base}/v1/objects/a/b`, null],
      [keyed, `${base}/v1/objects/%2E%2E`, null],
      [keyed, `${base}/social/v1/posts/p_1`, null],
      [keyed, 'https://dashboard.example/v1/objects/obj_1', null],
      [keyed, 'not a url', null],
      [social, `${base}/social/v1/posts/p_1`, 'p_1'],
      [social, `${base}/v1/objects/obj_1`, null],
      [social, `https://social.example/linkedin-ru/posts/${'p'.repeat(30)}`, null],
    ];
    for (const [adapter, url, id] of cases) assert.equal(adapter.resolveUrl(url), id, `${adapter.name} ${url}`);
  });

  test('confirm by URL: the URL resolves to the provider’s object, which is checked like one named by ID', async () => {
    for (const [adapter, operation, payload] of [
      [keyed, 'task.create', { title: 'Prepare preview', request: 'r-url' }],
      [social, 'post.publish', { channel: 'c', text: 'by url' }],
    ] as const) {
      const ours = sendable(adapter, `${adapter.name}:url`, operation, payload);
      const sent = await adapter.send(ours.send);
      assert.equal(sent.class, 'confirmed');
      if (sent.class !== 'confirmed') return;
      const typed = `${sent.externalUrl}/?utm_source=chat`;
      const named = adapter.resolveUrl(typed);
      assert.equal(named, sent.externalId);
      const seen = await adapter.lookup(named!, ours.readback);
      assert.deepEqual(seen.exists && [seen.externalId, seen.externalUrl, seen.matchesRelease], [
        sent.externalId,
        sent.externalUrl,
        true,
      ]);
      const other = sendable(adapter, `${adapter.name}:other`, operation, payload);
      const notOurs = await adapter.lookup(named!, other.readback);
      assert.equal(notOurs.exists && notOurs.matchesRelease, false, 'another effect’s object does not match');
      assert.deepEqual(await adapter.lookup(`${named}x`, ours.readback), { exists: false });
    }
  });
});
