// A NATS server with JetStream for one test file: the machine's own at 127.0.0.1:4222 when it answers
// with JetStream, else Debian's `nats-server -js` started on a free loopback port (stopped after). Each
// test file makes its own stream on its own subjects, so files never share messages or message IDs.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { freePort } from '../stack/free-port.js';
import { startGuarded } from '../stack/guarded-server.js';
import { waitFor } from '../stack/wait-for.js';

export interface NatsServer {
  /** host:port */
  address: string;
  /** Whether we started it (and will stop it). */
  ours: boolean;
  connection: NatsConnection;
  stop(): Promise<void>;
}

async function jetStreamAt(address: string): Promise<NatsConnection | undefined> {
  const nc = await connect({ servers: address, reconnect: false, timeout: 2000 }).catch(() => undefined);
  if (!nc) return undefined;
  const ok = await jetstreamManager(nc, { timeout: 2000 })
    .then(() => true)
    .catch(() => false);
  if (ok) return nc;
  await nc.close();
  return undefined;
}

export async function startNats(preferred = process.env.NATS_ADDRESS ?? '127.0.0.1:4222'): Promise<NatsServer> {
  const running = await jetStreamAt(preferred);
  if (running) return { address: preferred, ours: false, connection: running, stop: () => running.close() };
  const port = await freePort();
  const storeDir = mkdtempSync(join(tmpdir(), 'nats-js-'));
  const server = startGuarded(process.env.NATS_SERVER_BIN ?? 'nats-server', [
    '-js',
    '-a',
    '127.0.0.1',
    '-p',
    String(port),
    '-sd',
    storeDir,
  ]);
  const address = `127.0.0.1:${port}`;
  const connection = await waitFor(
    async () => {
      if (server.child.exitCode !== null) throw new Error(`nats-server exited: ${server.output()}`);
      return jetStreamAt(address);
    },
    'nats-server to answer with JetStream',
    30_000,
  );
  return {
    address,
    ours: true,
    connection,
    async stop() {
      await connection.close();
      await server.stop();
      rmSync(storeDir, { recursive: true, force: true });
    },
  };
}
