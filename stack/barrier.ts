// A start barrier across processes: contenders connect to a loopback port and are all let go at once when
// the last one arrives, so a race between two CLI processes is a race, not two runs a second apart.
import { connect, createServer, type Socket } from 'node:net';

/** The environment variable through which a test hands a barrier's address to a child process. */
export const BARRIER_ENV = 'EFFECT_LEDGER_TEST_BARRIER';

export interface Barrier {
  /** host:port to put in BARRIER_ENV. */
  address: string;
  /** How many contenders have arrived so far. */
  arrived(): number;
  close(): Promise<void>;
}

export async function startBarrier(parties: number): Promise<Barrier> {
  const waiting: Socket[] = [];
  let arrived = 0;
  const server = createServer((socket) => {
    socket.on('error', () => {});
    waiting.push(socket);
    arrived += 1;
    if (arrived === parties) for (const s of waiting) s.end('go\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    address: `127.0.0.1:${port}`,
    arrived: () => arrived,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of waiting) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Waits at the barrier until every contender has arrived (or fails after timeoutMs). */
export function arriveAtBarrier(address: string, timeoutMs = 60_000): Promise<void> {
  const [host, port] = address.split(':');
  return new Promise<void>((resolve, reject) => {
    const socket = connect(Number(port), host ?? '127.0.0.1');
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`barrier ${address}: not everyone arrived within ${timeoutMs} ms`));
    }, timeoutMs);
    let seen = '';
    socket.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      if (seen.includes('go')) {
        clearTimeout(timer);
        socket.destroy();
        resolve();
      }
    });
    socket.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}
