// When the machine has settled: the bench's rate with effects waiting is a figure of them waiting, not of the
// work their parking left behind (visibility and timer tasks still draining in the server, autovacuum and
// checkpoints in PostgreSQL after thousands of inserts). Read from /proc/stat, the whole machine: work the
// parking left may run in processes no role claims (PostgreSQL's autovacuum workers, its checkpointer).
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

/** /proc/stat's first line: busy and total clock ticks over every core since boot. */
function machineTicks(): { busy: number; total: number; cores: number } {
  const lines = readFileSync('/proc/stat', 'utf8').split('\n');
  const fields = (lines[0] ?? '').trim().split(/\s+/).slice(1).map(Number);
  const total = fields.reduce((sum, n) => sum + n, 0);
  // idle and iowait are not busy.
  const busy = total - (fields[3] ?? 0) - (fields[4] ?? 0);
  return { busy, total, cores: lines.filter((line) => /^cpu\d+ /.test(line)).length };
}

/** Busy cores over the next `ms`: 0 idle, 2 both cores of two at work. */
export async function busyCores(ms: number): Promise<number> {
  const before = machineTicks();
  await sleep(ms);
  const after = machineTicks();
  const total = after.total - before.total;
  return total > 0 ? ((after.busy - before.busy) / total) * after.cores : 0;
}

export interface Settled {
  /** Busy cores in each window read, oldest first. */
  windows: number[];
  seconds: number;
  /** False when `capMs` ran out first: the figure after it was taken on a machine still settling. */
  settled: boolean;
}

/**
 * Waits until the machine's load stops falling: three windows in a row within `toleranceCores` of each other,
 * or one at most `floorCores` busy (quiet). Steady is not idle — effects looking at their declared rate keep a
 * constant load — so what is waited out is what decays: the aftermath. At most `capMs`.
 */
export async function untilSettled({
  windowMs = 15_000,
  toleranceCores = 0.05,
  floorCores = 0.1,
  capMs = 900_000,
} = {}): Promise<Settled> {
  const began = performance.now();
  const windows: number[] = [];
  for (;;) {
    windows.push(await busyCores(windowMs));
    const lastThree = windows.slice(-3);
    const last = windows.at(-1) ?? 0;
    // A slow decay moves less than the tolerance per window: the three must lie within it, not each step.
    const steady = lastThree.length === 3 && Math.max(...lastThree) - Math.min(...lastThree) <= toleranceCores;
    const seconds = (performance.now() - began) / 1000;
    if (last <= floorCores || steady) return { windows, seconds, settled: true };
    if (seconds * 1000 >= capMs) return { windows, seconds, settled: false };
  }
}
