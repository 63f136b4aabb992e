// A free loopback port below 32768. The server stores each service's membership port in PostgreSQL as a
// smallint (cluster_membership.rpc_port), so the kernel's ephemeral ports (32768 and up) make it fail at
// start ("value … is out of range for type smallint"). Random probes in 20000–32767, bound to check.
import { createServer } from 'node:net';

const taken = new Set<number>();

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer()
      .once('error', () => resolve(false))
      .listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

export async function freeLowPort(): Promise<number> {
  for (let tries = 0; tries < 200; tries++) {
    const port = 20_000 + Math.floor(Math.random() * 12_768);
    // Not twice in one process: the server binds its ports a moment after we hand them out.
    if (taken.has(port)) continue;
    if (await bindable(port)) {
      taken.add(port);
      return port;
    }
  }
  throw new Error('no free port below 32768 on 127.0.0.1');
}
