// The kit's own proxies, run in a process of their own (proxy-process.ts) and driven from here, as Toxiproxy is
// from stack/toxiproxy.ts: a proxy per cell and phase, in front of the destination's real server.
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnSupervised } from '../stack/reaper.js';
import { within } from '../stack/wait-for.js';
import type { FaultProxyOptions } from './fault-proxy.js';
import type { ProxyRequest } from './proxy-process.js';

export interface KitProxy {
  /** host:port the adapter connects to. */
  address: string;
  /** Resolves, with the time, once nothing the proxy carries is still on its way. */
  settled(): Promise<number>;
  stop(): Promise<void>;
}

export interface KitProxies {
  /** The HTTP proxy that faults a provider's shape (fault-proxy.ts). */
  fault(options: FaultProxyOptions): Promise<KitProxy>;
  /** The TCP proxy that holds each connection for `holdMs` (hold-proxy.ts). */
  hold(upstream: string, holdMs: number): Promise<KitProxy>;
  stop(): Promise<void>;
}

// proxy-process.ts under tsx, proxy-process.js where this module is compiled.
const entry = fileURLToPath(new URL(`./proxy-process${extname(fileURLToPath(import.meta.url))}`, import.meta.url));

export async function startKitProxies(): Promise<KitProxies> {
  const args = entry.endsWith('.ts') ? ['--import', 'tsx', entry] : [entry];
  const server = spawnSupervised(process.execPath, args);
  const port = await within(
    new Promise<string>((resolve, reject) => {
      let printed = '';
      server.child.stdout?.on('data', (chunk: Buffer) => {
        printed += chunk.toString();
        const listening = /listening (\d+)/.exec(printed);
        if (listening?.[1]) resolve(listening[1]);
      });
      void server.exited.then(() => reject(new Error(`the kit's proxy process exited: ${server.output()}`)));
    }),
    "the kit's proxy process to listen",
    30_000,
  ).catch(async (error: unknown) => {
    await server.stop();
    throw error;
  });
  const control = `http://127.0.0.1:${port}/proxies`;
  const call = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${control}${path}`, {
      method,
      ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
    });
    const answer = (await response.json()) as Record<string, unknown>;
    if (!response.ok) throw new Error(`the kit's proxy process answered ${response.status}: ${String(answer.error)}`);
    return answer;
  };
  const started = async (request: ProxyRequest): Promise<KitProxy> => {
    const { address } = (await call('POST', '', request)) as { address: string };
    const own = address.split(':').pop();
    return {
      address,
      settled: async () => (await call('GET', `/${own}/settled`)).at as number,
      stop: async () => {
        await call('DELETE', `/${own}`).catch(() => {});
      },
    };
  };
  return {
    fault: (options) => started({ kind: 'fault', options }),
    hold: (upstream, holdMs) => started({ kind: 'hold', upstream, holdMs }),
    stop: () => server.stop(),
  };
}
