// A port nothing listens on right now (the server that wants it binds it a moment later).
import { type AddressInfo, createServer } from 'node:net';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** `preferred` when nothing listens on it (a port a person may know, e.g. Mailpit's 8025), else a free one. */
export async function preferredPort(preferred: number): Promise<number> {
  const free = await new Promise<boolean>((done) => {
    const probe = createServer()
      .once('error', () => done(false))
      .listen(preferred, '127.0.0.1', () => probe.close(() => done(true)));
  });
  return free ? preferred : freePort();
}
