// A heartbeat is a write to the workflow's state on the server, as costly there as the look it keeps alive: with
// thousands waiting, one per look was a third of what each look cost the server. A look that ends within seconds
// needs none (its answer or its retry tells the server it lived; a cancel waits for it at most that long), so a
// readback heartbeats only once it has run QUIET_FOR_MS, and then at each page and turn as before — the gaps
// between those (a turn's wait, a request's timeout) stay well inside its 30 s heartbeat timeout.
import { Context } from '@temporalio/activity';

export const QUIET_FOR_MS = 3_000;

/** A heartbeat for this activity attempt that is sent only once the attempt has run `quietForMs`. */
export function quietHeartbeat(context = Context.current(), quietForMs = QUIET_FOR_MS): () => void {
  const began = performance.now();
  return () => {
    if (performance.now() - began >= quietForMs) context.heartbeat();
  };
}
