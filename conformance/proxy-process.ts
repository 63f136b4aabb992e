// The kit's own proxies (fault-proxy.ts, hold-proxy.ts) in a process of their own, as Toxiproxy is: a fault that
// lives in timing (an answer lost, a 503, a held request) must not wait on the kit's busy event loop, where the
// worker, the client and every cell run. A small control API on loopback, driven by kit-proxies.ts:
//   POST   /proxies                 { kind: 'fault', options } | { kind: 'hold', upstream, holdMs } → { address }
//   GET    /proxies/<port>/settled  answers once nothing the proxy carries is on its way → { at }
//   DELETE /proxies/<port>
// It prints `listening <port>` once it listens; the reaper stops it with the kit's process (stack/reaper.ts).
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type FaultProxyOptions, startFaultProxy } from './fault-proxy.js';
import { startHoldProxy } from './hold-proxy.js';

interface Running {
  settled(): Promise<number>;
  stop(): Promise<void>;
}

export type ProxyRequest =
  | { kind: 'fault'; options: FaultProxyOptions }
  | { kind: 'hold'; upstream: string; holdMs: number };

const running = new Map<string, Running>();

async function body(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

function answer(res: ServerResponse, status: number, json: unknown) {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(json));
}

async function handle(req: IncomingMessage, res: ServerResponse) {
  const url = new URL(req.url ?? '/', 'http://kit.invalid');
  const [, collection, port, action] = url.pathname.split('/');
  if (collection !== 'proxies') return answer(res, 404, { error: 'not found' });
  if (req.method === 'POST' && !port) {
    const asked = (await body(req)) as ProxyRequest;
    const proxy =
      asked.kind === 'hold' ? await startHoldProxy(asked.upstream, asked.holdMs) : await startFaultProxy(asked.options);
    running.set(proxy.address.split(':').pop() as string, proxy);
    return answer(res, 200, { address: proxy.address });
  }
  const proxy = port ? running.get(port) : undefined;
  if (!proxy) return answer(res, 404, { error: `no proxy on ${port}` });
  if (req.method === 'GET' && action === 'settled') return answer(res, 200, { at: await proxy.settled() });
  if (req.method === 'DELETE') {
    running.delete(port as string);
    await proxy.stop();
    return answer(res, 200, { stopped: true });
  }
  return answer(res, 404, { error: 'not found' });
}

const control = createServer((req, res) => {
  handle(req, res).catch((error: unknown) => answer(res, 500, { error: String(error) }));
});
control.listen(0, '127.0.0.1', () => {
  process.stdout.write(`listening ${(control.address() as AddressInfo).port}\n`);
});
