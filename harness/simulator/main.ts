// Process entry for the provider simulator. Prints one JSON line {"url": ...}
// once listening, so a parent can spawn it with --port 0 and learn the port.
import { fstatSync } from 'node:fs';
import { Command, InvalidArgumentError } from 'commander';
import { createProviderSimulator, DEFAULT_KEY_RETENTION_MS, DEFAULT_KEYLESS_LIST_LIMIT } from './server.js';

function integer(min: number, max = Number.MAX_SAFE_INTEGER) {
  return (raw: string): number => {
    const value = /^\d+$/.test(raw) ? Number(raw) : NaN;
    if (!(value >= min && value <= max))
      throw new InvalidArgumentError(`expected an integer between ${min} and ${max}`);
    return value;
  };
}

/**
 * Only a pipe or socket on stdin signals "a parent is watching". A TTY, a file or
 * /dev/null (what bash gives `cmd &` without job control) would hit EOF at once
 * or never mean anything, so watching it would kill the simulator for nothing.
 */
function stdinIsPipe(): boolean {
  try {
    const stat = fstatSync(0);
    return stat.isFIFO() || stat.isSocket();
  } catch {
    return false;
  }
}

const opts = new Command()
  .name('provider-simulator')
  .description('Stripe-style and key-less provider simulator with fault injection, on 127.0.0.1')
  .option('--port <port>', 'port to bind on 127.0.0.1 (0 = any free port)', integer(0, 65535), 0)
  .option('--key-retention-ms <ms>', 'how long idempotency keys are remembered', integer(0), DEFAULT_KEY_RETENTION_MS)
  .option(
    '--keyless-list-limit <n>',
    'how many newest social posts listing can see',
    integer(1),
    DEFAULT_KEYLESS_LIST_LIMIT,
  )
  .option('--no-exit-on-stdin-close', 'keep running when stdin (a pipe from the parent) reaches EOF')
  .parse()
  .opts<{ port: number; keyRetentionMs: number; keylessListLimit: number; exitOnStdinClose: boolean }>();

const simulator = createProviderSimulator({
  keyRetentionMs: opts.keyRetentionMs,
  keylessListLimit: opts.keylessListLimit,
});

let stopping = false;
async function stop(): Promise<void> {
  if (stopping) process.exit(1); // second signal: do not wait any longer
  stopping = true;
  await simulator.close();
  process.exit(0);
}

// A parent that died before reading our URL closes our stdout: that is a reason to stop, not to crash.
process.stdout.on('error', () => void stop());
process.on('SIGTERM', () => void stop());
process.on('SIGINT', () => void stop());

try {
  const url = await simulator.listen(opts.port, '127.0.0.1');
  process.stdout.write(`${JSON.stringify({ url })}\n`);
} catch (err) {
  process.stderr.write(`provider-simulator: cannot listen: ${String(err)}\n`);
  process.exit(1);
}

// The parent holds the write end of our stdin; EOF means it is gone, so we go too.
if (opts.exitOnStdinClose && stdinIsPipe()) {
  process.stdin.on('end', () => void stop());
  process.stdin.on('error', () => void stop());
  process.stdin.resume();
}
