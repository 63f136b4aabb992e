// A provider call's deadline as an AbortSignal that holds. Not `AbortSignal.any([AbortSignal.timeout(ms), …])`:
// on Node 20 that composite keeps only weak hold of its timeout signal, and once the garbage collector has run, the
// timeout never reaches it (nodejs/node#57736) — a fetch given it runs on until the provider answers. Measured on
// this project's Node (20.20.2, a GC every 50 ms, a server answering after 5 s): 5 of 5 POSTs with a 500 ms deadline
// answered after 5.1 s, where `AbortSignal.timeout` alone aborted all 5 at 0.5 s. A send that outlives its deadline
// breaks the in-flight window readback counts on. Here the timer holds the controller itself; `clear()` when done.

export interface Deadline {
  /** Aborts at the deadline (reason: a TimeoutError, as AbortSignal.timeout's) or with the first source that aborts. */
  signal: AbortSignal;
  /** Stops the timer and forgets the sources: call once the call has ended, however it ended. */
  clear(): void;
}

export function deadlineSignal(ms: number, ...sources: readonly (AbortSignal | undefined)[]): Deadline {
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')),
    Math.max(0, ms),
  );
  const followed: Array<[AbortSignal, () => void]> = [];
  const clear = () => {
    clearTimeout(timer);
    for (const [source, onAbort] of followed.splice(0)) source.removeEventListener('abort', onAbort);
  };
  for (const source of sources) {
    if (!source) continue;
    if (source.aborted) {
      controller.abort(source.reason);
      break;
    }
    const onAbort = () => controller.abort(source.reason);
    source.addEventListener('abort', onAbort, { once: true });
    followed.push([source, onAbort]);
  }
  if (controller.signal.aborted) clear();
  else controller.signal.addEventListener('abort', clear, { once: true });
  return { signal: controller.signal, clear };
}
