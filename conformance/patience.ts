// What the kit forgives a busy machine, and nothing else: a read of the server that failed once (its count, a
// readback, a lookup) is tried again, as the activities retry theirs; a send that answered late is measured
// against the call timeout plus how late this process's own timers ran meanwhile; and cells take turns.
import { monitorEventLoopDelay } from 'node:perf_hooks';

/** Tries `read` up to three times, half a second apart; the last failure is thrown. */
export async function retried<T>(read: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries++) {
    try {
      return await read();
    } catch (error) {
      if (tries >= 3) throw error;
      await new Promise((resolve) => setTimeout(resolve, 500 * tries));
    }
  }
}

/** How late this process's timers have run since it was called: the longest delay of its event loop, in ms. */
export function lateTimers(): { late(): number; stop(): number } {
  const histogram = monitorEventLoopDelay({ resolution: 20 });
  histogram.enable();
  const late = () => Math.round(histogram.max / 1e6);
  return {
    late,
    stop() {
      histogram.disable();
      return late();
    },
  };
}

/** At most `limit` tasks at once, across every caller; the others wait their turn in order. */
export function turns(limit: number): <T>(task: () => Promise<T>) => Promise<T> {
  let running = 0;
  const waiting: (() => void)[] = [];
  return async (task) => {
    if (running >= limit) await new Promise<void>((resolve) => waiting.push(resolve));
    running += 1;
    try {
      return await task();
    } finally {
      running -= 1;
      waiting.shift()?.();
    }
  };
}
