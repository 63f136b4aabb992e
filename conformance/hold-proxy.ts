// The kit's proxy for `send-outlives-deadline`, at the TCP level so that any protocol meets it: each connection is
// accepted at once and held, nothing forwarded, for `holdMs` (past the call timeout and the absence grace); then,
// if the client is still connected, it reaches the server with everything it sent, and from then on bytes pass
// both ways. A client that closed its connection by then (a send that stopped at its deadline) left nothing: the
// held request never reaches the server. A send that returned at its deadline but left its request running
// (its connection still open) lands that request after the in-flight window, and the kit counts it.
import { connect, createServer, type Socket } from 'node:net';

export interface HoldProxy {
  address: string;
  /** Resolves, with the time, once nothing is held and the forwarded connections have been quiet for a moment. */
  settled(): Promise<number>;
  stop(): Promise<void>;
}

/** Quiet for this long, a forwarded connection has nothing more on its way. */
const QUIET_MS = 300;

export async function startHoldProxy(upstream: string, holdMs: number): Promise<HoldProxy> {
  const host = upstream.slice(0, upstream.lastIndexOf(':'));
  const port = Number(upstream.split(':').pop());
  const sockets = new Set<Socket>();
  let held = 0;
  let lastActivity = 0;
  const touched = () => {
    lastActivity = Date.now();
  };

  const server = createServer((client) => {
    sockets.add(client);
    held += 1;
    const chunks: Buffer[] = [];
    let gone = false;
    const hold = (chunk: Buffer) => chunks.push(chunk);
    client.on('data', hold);
    client.once('close', () => {
      gone = true;
      sockets.delete(client);
    });
    client.on('error', () => {});
    setTimeout(() => {
      held -= 1;
      touched();
      if (gone) return;
      const server = connect(port, host);
      sockets.add(server);
      server.on('error', () => client.destroy());
      server.once('close', () => {
        sockets.delete(server);
        client.destroy();
      });
      client.once('close', () => server.destroy());
      client.off('data', hold);
      for (const chunk of chunks) server.write(chunk);
      client.on('data', (chunk: Buffer) => {
        touched();
        server.write(chunk);
      });
      server.on('data', (chunk: Buffer) => {
        touched();
        client.write(chunk);
      });
    }, holdMs).unref();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return {
    address: `127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`,
    async settled() {
      while (held > 0 || Date.now() - lastActivity < QUIET_MS) await new Promise((resolve) => setTimeout(resolve, 50));
      return Date.now();
    },
    stop: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
