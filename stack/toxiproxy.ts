// Toxiproxy on loopback for one test file, driven by toxiproxy-node-client: a proxy in front of each
// real destination, so faults happen at the network boundary between the worker and it.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { type Proxy as ToxicProxy, Toxiproxy } from 'toxiproxy-node-client';
import { projectRoot } from '../workers/config.js';
import { freePort } from './free-port.js';
import { startGuarded } from './guarded-server.js';
import { waitFor } from './wait-for.js';

export interface ToxiproxyServer {
  client: Toxiproxy;
  /** A proxy on a free loopback port in front of `upstream` (host:port); returns it and its port. */
  proxy(name: string, upstream: string): Promise<{ proxy: ToxicProxy; port: number }>;
  /**
   * Bytes a proxy has carried each way over its closed connections (started with { metrics: true }):
   * upstream is what clients sent, downstream what the server answered.
   */
  bytes(name: string): Promise<{ upstream: number; downstream: number }>;
  stop(): Promise<void>;
}

export function toxiproxyBinary(): string {
  const local = resolve(projectRoot, 'bin/toxiproxy-server');
  return process.env.TOXIPROXY_BIN ?? (existsSync(local) ? local : 'toxiproxy-server');
}

export async function startToxiproxy(options: { metrics?: boolean } = {}): Promise<ToxiproxyServer> {
  const apiPort = await freePort();
  const server = startGuarded(toxiproxyBinary(), [
    '-host',
    '127.0.0.1',
    '-port',
    String(apiPort),
    ...(options.metrics ? ['-proxy-metrics'] : []),
  ]);
  const client = new Toxiproxy(`http://127.0.0.1:${apiPort}`);
  await waitFor(
    async () => {
      if (server.child.exitCode !== null) throw new Error(`toxiproxy exited: ${server.output()}`);
      return (await client.getVersion()) !== undefined;
    },
    'Toxiproxy to answer',
    30_000,
  );
  return {
    client,
    async proxy(name, upstream) {
      // The port was free a moment ago; on a busy machine another process may take it first: try another.
      for (let tries = 1; ; tries++) {
        const port = await freePort();
        try {
          const proxy = await client.createProxy({ name, listen: `127.0.0.1:${port}`, upstream });
          return { proxy, port };
        } catch (error) {
          if (tries >= 3) throw error;
          await client
            .get(name)
            .then((stale) => stale.remove())
            .catch(() => {});
        }
      }
    },
    async bytes(name) {
      const text = await (await fetch(`http://127.0.0.1:${apiPort}/metrics`)).text();
      const carried = (direction: string) =>
        text
          .split('\n')
          .filter((line) => line.startsWith('toxiproxy_proxy_received_bytes_total{'))
          .filter((line) => line.includes(`direction="${direction}"`) && line.includes(`proxy="${name}"`))
          .reduce((sum, line) => sum + Number(line.split(' ').pop()), 0);
      return { upstream: carried('upstream'), downstream: carried('downstream') };
    },
    stop: () => server.stop(),
  };
}
