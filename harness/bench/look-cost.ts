// What a wait in UNKNOWN costs the workflow on v7, measured on effects already waiting for a person (the bench's
// looks phase, the outage's probe): the history of each before and after a window of looks, the looks counted from
// the ledger's readback evidence (and, as a cross-check, watchForObject's attempt in describe()'s pending
// activities), so events and bytes per look come out of the history itself; then the same for a wake — a decision
// refused as stale, and a look-now signal — which is what makes a v7 run write history while it waits; and a
// look-now as the client sends it where a look waits (a reset of the watch), which wakes nothing.
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import type postgres from 'postgres';
import type { EffectLedgerClient } from '../../client/effect-ledger-client.js';
import { waitFor } from '../../stack/wait-for.js';
import { decideUpdate, lookNowSignal } from '../../workflows/contract.js';

type HistoryEvent = proto.temporal.api.history.v1.IHistoryEvent;

const eventName = (e: HistoryEvent) =>
  (proto.temporal.api.enums.v1.EventType[e.eventType ?? 0] ?? String(e.eventType)).replace(/^EVENT_TYPE_/, '');

const encodedBytes = (events: HistoryEvent[]) =>
  proto.temporal.api.history.v1.History.encode({ events }).finish().length;

/** One waiting effect at one moment: its current run's history, its looks in the ledger, its watch's attempt. */
interface Snapshot {
  runId: string;
  events: HistoryEvent[];
  bytes: number;
  looks: number;
  /** watchForObject's attempt (describe's pending activity), 0 when none is pending. */
  attempt: number;
}

export interface WakeCost {
  wakes: number;
  eventsPerWake: number;
  bytesPerWake: number;
  /** The events one wake adds, by type (mean over the effects). */
  eventTypesPerWake: Record<string, number>;
}

export interface LookCost {
  effects: number;
  windowSeconds: number;
  /** Readback evidence rows the effects' looks left in the ledger during the window. */
  looks: number;
  /** How far watchForObject's attempt moved in the window (a look a retry; the first may only wait). */
  attempts: number;
  /** History events and bytes the window added to the effects' runs (effects whose run did not change). */
  events: number;
  bytes: number;
  eventsPerLook: number;
  bytesPerLook: number;
  /** CPU milliseconds per look of each role given (an upper bound: the window's idle work is in it too). */
  cpuMsPerLook: Record<string, number>;
  wakes: { staleDecision: WakeCost; lookNow: WakeCost };
  /** A look-now by the client (`lookNow`: a reset of the waiting watch): looks taken, and what they added. */
  resetLookNow: { resets: number; looks: number; events: number; bytes: number };
}

export interface LookCostDeps {
  client: Client;
  /** The ledger: readback evidence is counted there. */
  sql: postgres.Sql;
  /** Sends the look-now that resets the watch. */
  effects: EffectLedgerClient;
  /** CPU seconds so far by role (harness/bench/cpu.ts), read around the window; absent: no CPU figures. */
  cpu?: () => Record<string, number>;
  log?: (line: string) => void;
}

async function looksOf(sql: postgres.Sql, ids: string[]): Promise<Map<string, number>> {
  const rows = await sql<{ effectId: string; n: number }[]>`
    SELECT effect_id AS "effectId", count(*)::int AS n FROM provider_evidence
    WHERE kind = 'readback' AND effect_id IN ${sql(ids)} GROUP BY effect_id`;
  return new Map(rows.map((r) => [r.effectId, r.n]));
}

async function snapshot(deps: LookCostDeps, ids: string[]): Promise<Snapshot[]> {
  const looks = await looksOf(deps.sql, ids);
  return Promise.all(
    ids.map(async (id) => {
      const { runId, raw } = await deps.client.workflow.getHandle(id).describe();
      const history = await deps.client.workflow.getHandle(id, runId).fetchHistory();
      const events = history.events ?? [];
      const watch = (raw.pendingActivities ?? []).find((a) => a.activityType?.name === 'watchForObject');
      return { runId, events, bytes: encodedBytes(events), looks: looks.get(id) ?? 0, attempt: watch?.attempt ?? 0 };
    }),
  );
}

/** Whether the history, after `from`, shows the wake done: a new watch scheduled (and, for look-now, a look taken). */
function watchingAgain(events: HistoryEvent[], from: number): boolean {
  return events
    .slice(from)
    .some((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'watchForObject');
}

/**
 * Wakes each effect once with `wake`, waits until its run watches again (and, with `needsLook`, looked), and
 * returns what the wake added. The history is read again a second later: a wake's last events are counted too.
 */
async function measureWake(
  deps: LookCostDeps,
  ids: string[],
  wake: (id: string) => Promise<void>,
  needsLook: boolean,
): Promise<WakeCost> {
  let events = 0;
  let bytes = 0;
  let wakes = 0;
  const types: Record<string, number> = {};
  for (const id of ids) {
    const [before] = await snapshot(deps, [id]);
    if (!before) continue;
    await wake(id);
    await waitFor(
      async () => {
        const [now] = await snapshot(deps, [id]);
        return (
          now &&
          now.runId === before.runId &&
          watchingAgain(now.events, before.events.length) &&
          (!needsLook || now.looks > before.looks)
        );
      },
      `${id} to watch again after its wake`,
      120_000,
    );
    await new Promise((r) => setTimeout(r, 1000));
    const [after] = await snapshot(deps, [id]);
    if (!after || after.runId !== before.runId) continue;
    wakes++;
    events += after.events.length - before.events.length;
    bytes += after.bytes - before.bytes;
    for (const e of after.events.slice(before.events.length)) types[eventName(e)] = (types[eventName(e)] ?? 0) + 1;
  }
  return {
    wakes,
    eventsPerWake: wakes ? events / wakes : Number.NaN,
    bytesPerWake: wakes ? bytes / wakes : Number.NaN,
    eventTypesPerWake: Object.fromEntries(Object.entries(types).map(([t, n]) => [t, n / (wakes || 1)])),
  };
}

/**
 * Measures, on `ids` (effects waiting for a person whose looks come every few seconds, in runs that do not hand
 * over meanwhile), what `windowMs` of looks add to their histories, then what one wake of each kind adds.
 */
export async function measureLookCost(
  deps: LookCostDeps,
  ids: string[],
  windowMs: number,
  { wakes = ids.length }: { wakes?: number } = {},
): Promise<LookCost> {
  const log = deps.log ?? (() => {});
  const cpuBefore = deps.cpu?.();
  const t0 = performance.now();
  const first = await snapshot(deps, ids);
  log(`looks: ${ids.length} waiting effects, their histories read; ${windowMs / 1000} s of looks`);
  await new Promise((r) => setTimeout(r, windowMs));
  const last = await snapshot(deps, ids);
  const windowSeconds = (performance.now() - t0) / 1000;
  const cpuAfter = deps.cpu?.();
  const same = first.flatMap((a, i) => {
    const b = last[i];
    return b && b.runId === a.runId ? [[a, b] as const] : [];
  });
  const sum = (f: (a: Snapshot, b: Snapshot) => number) => same.reduce((n, [a, b]) => n + f(a, b), 0);
  const looks = sum((a, b) => b.looks - a.looks);
  const events = sum((a, b) => b.events.length - a.events.length);
  const bytes = sum((a, b) => b.bytes - a.bytes);
  const cpuMsPerLook =
    cpuBefore && cpuAfter && looks
      ? Object.fromEntries(
          Object.keys(cpuAfter).map((role) => [
            role,
            (((cpuAfter[role] ?? 0) - (cpuBefore[role] ?? 0)) * 1000) / looks,
          ]),
        )
      : {};
  log(`looks: ${looks} looks added ${events} history events; waking ${wakes} with a stale decision, then a look-now`);
  const woken = ids.slice(0, wakes);
  const staleDecision = await measureWake(
    deps,
    woken,
    async (id) => {
      const answer = await deps.client.workflow.getHandle(id).executeUpdate(decideUpdate, {
        args: [{ decision: 'abandon', actor: 'bench@example.com', reason: 'an old ticket', attempt: 99 }],
      });
      if (answer.accepted) throw new Error(`${id}: a decision for attempt 99 was accepted`);
    },
    false,
  );
  const asked = { actor: 'bench@example.com', reason: 'measuring a wake' };
  const lookNow = await measureWake(
    deps,
    woken,
    (id) => deps.client.workflow.getHandle(id).signal(lookNowSignal, asked),
    true,
  );
  const resetLookNow = { resets: 0, looks: 0, events: 0, bytes: 0 };
  for (const id of woken) {
    const [before] = await snapshot(deps, [id]);
    if (!before) continue;
    if ((await deps.effects.lookNow(id, asked)) !== 'reset') continue;
    resetLookNow.resets++;
    await waitFor(
      async () => ((await snapshot(deps, [id]))[0]?.looks ?? 0) > before.looks,
      `${id} to look now`,
      60_000,
    );
    const [after] = await snapshot(deps, [id]);
    if (!after || after.runId !== before.runId) continue;
    resetLookNow.looks += after.looks - before.looks;
    resetLookNow.events += after.events.length - before.events.length;
    resetLookNow.bytes += after.bytes - before.bytes;
  }
  return {
    effects: same.length,
    windowSeconds,
    looks,
    attempts: sum((a, b) => b.attempt - a.attempt),
    events,
    bytes,
    eventsPerLook: looks ? events / looks : Number.NaN,
    bytesPerLook: looks ? bytes / looks : Number.NaN,
    cpuMsPerLook,
    wakes: { staleDecision, lookNow },
    resetLookNow,
  };
}
