// A provider call stops at its deadline even when the garbage collector runs meanwhile (a busy worker collects all
// the time). The send and the read take the call's timeout and the activity's cancellation together; combined with
// `AbortSignal.any([AbortSignal.timeout(ms), …])`, Node 20 loses the timeout after a GC (nodejs/node#57736), and the
// request held its connection until the provider answered: the flaky "answered, not client_gone" fates of
// unknown-keyless and unknown-keyed in CI. Real loopback server, real fetch, a GC every 20 ms.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { sendJson } from '../activities/destinations/http-outcome.js';
import { getJson } from '../activities/destinations/http-read.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Holds every request until the test ends; says when a client went away without its answer. */
const held: ServerResponse[] = [];
let gone: Array<() => void> = [];
const server = createServer((req: IncomingMessage, res: ServerResponse) => {
  req.resume();
  if (req.url?.endsWith('/warm')) return res.end('{}');
  held.push(res);
  res.on('close', () => {
    if (!res.writableEnded) for (const notify of gone.splice(0)) notify();
  });
});
let url = '';
let collecting: NodeJS.Timeout;

before(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/objects`;
  // A first exchange, answered at once: the calls under test reach a provider that holds them well inside 300 ms.
  await (await fetch(`${url}/warm`)).text();
  collecting = setInterval(gc, 20);
});
after(() => {
  clearInterval(collecting);
  for (const res of held) res.end('{}');
  server.closeAllConnections();
  server.close();
});

/** Resolves when the provider sees the client leave; rejects if it has not within `ms` (its answer still awaited). */
function clientGone(ms: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the client still held its request after ${ms} ms`)), ms);
    gone.push(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

describe('a provider call stops at its deadline, garbage collection or not', () => {
  test('a send with the activity’s cancellation signal beside its 300 ms timeout is unknown, its connection closed', async () => {
    gone = [];
    const left = clientGone(5000);
    const cancellation = new AbortController(); // the activity's, never fired here
    const outcome = await sendJson('POST', url, { amount: 1 }, {}, 300, cancellation.signal);
    await left;
    assert.ok('class' in outcome && outcome.class === 'unknown', JSON.stringify(outcome));
    assert.equal(outcome.detail.errorCode, 'TimeoutError');
  });

  test('a read with the readback’s signal beside its 300 ms timeout fails, its connection closed', async () => {
    gone = [];
    const left = clientGone(5000);
    const readback = new AbortController();
    await assert.rejects(getJson(url, { signal: readback.signal }, {}, 300), /GET .* failed: .*timeout/i);
    await left;
  });

  test('the activity’s cancellation still stops a send at once', async () => {
    gone = [];
    const left = clientGone(5000);
    const cancellation = new AbortController();
    const sent = sendJson('POST', url, { amount: 2 }, {}, 60_000, cancellation.signal);
    setTimeout(() => cancellation.abort(new Error('activity cancelled')), 100);
    await left;
    const outcome = await sent;
    assert.ok('class' in outcome && outcome.class === 'unknown', JSON.stringify(outcome));
  });
});
