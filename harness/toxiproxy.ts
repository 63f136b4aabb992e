// Toxiproxy on loopback for one test file, driven by toxiproxy-node-client: a proxy in front of each
// real destination, so faults happen at the network boundary between the worker and it.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { type Proxy as ToxicProxy, Toxiproxy } from 'toxiproxy-node-client';
import { projectRoot } from '../workers/config.js';
import { freePort } from './free-port.js';
import { spawnSupervised } from './reaper.js';
import { waitFor } from './wait-for.js';

export interface ToxiproxyServer {
  client: Toxiproxy;
  /** A proxy on a free loopback port in front of `upstream` (host:port); returns it and its port. */
  proxy(name: string, upstream: string): Promise<{ proxy: ToxicProxy; port: number }>;
  stop(): Promise<void>;
}

export function toxiproxyBinary(): string {
  const local = resolve(projectRoot, 'bin/toxiproxy-server');
  return process.env.TOXIPROXY_BIN ?? (existsSync(local) ? local : 'toxiproxy-server');
}

export async function startToxiproxy(): Promise<ToxiproxyServer> {
  const apiPort = await freePort();
  const server = spawnSupervised(toxiproxyBinary(), ['-host', '127.0.0.1', '-port', String(apiPort)]);
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
      const port = await freePort();
      const proxy = await client.createProxy({ name, listen: `127.0.0.1:${port}`, upstream });
      return { proxy, port };
    },
    stop: () => server.stop(),
  };
}
