// When an object was made, as the ledger records it: ISO 8601 text an adapter hands on (`occurredAt`). Checked
// where an adapter's answer crosses into the ledger (activities/crossing-checks.ts) and again where the ledger
// writes it: text that is no time (`"1733…"`, an empty string) or no plausible creation time (January 1970: unix
// seconds taken for milliseconds) never becomes a fact.

/** Creation times the ledger takes: from 2000 to 2200. */
export const EARLIEST_FACT_MS = Date.UTC(2000, 0, 1);
export const LATEST_FACT_MS = Date.UTC(2200, 0, 1);

/** The time `occurredAt` names, or why it names none. */
export function factTime(occurredAt: unknown): { ok: true; at: Date } | { ok: false; why: string } {
  if (typeof occurredAt !== 'string' || !/^\d{4}-\d{2}-\d{2}/.test(occurredAt))
    return { ok: false, why: `occurredAt: ${JSON.stringify(occurredAt) ?? String(occurredAt)} is not ISO 8601 text` };
  const ms = Date.parse(occurredAt);
  if (!Number.isFinite(ms)) return { ok: false, why: `occurredAt: ${JSON.stringify(occurredAt)} is no time` };
  if (ms < EARLIEST_FACT_MS || ms >= LATEST_FACT_MS)
    return { ok: false, why: `occurredAt: ${occurredAt} is not a plausible creation time (a misread unit?)` };
  return { ok: true, at: new Date(ms) };
}
