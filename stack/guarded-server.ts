// Runs a server binary that knows nothing of our process (Mailpit, Toxiproxy, nats-server) so that it
// never outlives us: a shell between us and it holds our pipe on its stdin and stops the server when
// the pipe closes, which happens when we stop it, and also when we die by any signal (SIGKILL included).
import { type ChildProcess, spawn } from 'node:child_process';

export interface GuardedServer {
  child: ChildProcess;
  /** The server's last output lines (for an error message). */
  output(): string;
  stop(): Promise<void>;
}

// `read` returns only at end of input: then the server gets SIGTERM, and the shell waits for it to go.
const GUARD = '"$@" </dev/null & server=$!; while read -r _; do :; done; kill "$server" 2>/dev/null; wait "$server"';

export function startGuarded(command: string, args: string[]): GuardedServer {
  const child = spawn('sh', ['-c', GUARD, 'guard', command, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  const tail: string[] = [];
  const keep = (chunk: Buffer) => {
    tail.push(chunk.toString());
    if (tail.length > 40) tail.shift();
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    child,
    output: () => tail.join(''),
    async stop() {
      child.stdin?.end();
      await exited;
    },
  };
}
