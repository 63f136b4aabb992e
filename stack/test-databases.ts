// Throwaway databases: each test stack makes its own (the ledger's effect_ledger_<purpose>_<random>, an
// orders_<random>, a cluster's temporal_<random> pair) and drops it when it stops. A process that dies
// first (SIGKILL, a crash) cannot; so each is claimed with a comment naming the process that made it, and
// a run starts by sweeping the databases of processes that are gone. Other runs may be in progress beside
// ours on the same PostgreSQL: a database whose owner still runs, or that anyone is connected to, stays; one
// without a claim (made by older code) goes only when nobody is connected and it is over an hour old.
// Run directly (`node --import tsx stack/test-databases.ts`), it sweeps and says what it dropped.
import { hostname } from 'node:os';
import { pathToFileURL } from 'node:url';
import postgres from 'postgres';
import { runningSince, startTime } from './proc-stat.js';

const defaultAdminUrl = () => process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** The names the harness gives throwaway databases: a random hex suffix, never a kept database's name. */
export const THROWAWAY_DATABASE =
  /^(effect_ledger_[a-z0-9_]+_[0-9a-f]{8,10}|temporal_(visibility_)?[0-9a-f]{8}|orders_[0-9a-f]{10})$/;

const CLAIM = 'effect-ledger throwaway database';
const UNCLAIMED_MIN_AGE_MS = 60 * 60_000;

/**
 * Marks throwaway `database` as this process's: a sweep drops it once this process is gone. A kept
 * database (`npm run cluster`'s, the demo's) is left as it is.
 */
export async function claimDatabase(database: string, adminUrl = defaultAdminUrl()): Promise<void> {
  const started = startTime(process.pid);
  if (!THROWAWAY_DATABASE.test(database) || !started) return; // no /proc: the sweep sees it as unclaimed
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    const owner = `${CLAIM}; owner ${hostname()} ${process.pid} ${started}`;
    await admin.unsafe(`COMMENT ON DATABASE "${database}" IS '${owner.replaceAll("'", "''")}'`);
  } finally {
    await admin.end();
  }
}

export interface ThrowawayDatabase {
  name: string;
  /** host, pid and start time of the process that claimed it, if one did. */
  owner?: { host: string; pid: number; started: string };
  connections: number;
  /** Since its creation, where the server tells (a superuser's pg_stat_file). */
  ageMs?: number;
}

/** Why a throwaway database must stay (a run may be using it), or null when it is a dead run's leftover. */
export function keepReason(db: ThrowawayDatabase): string | null {
  if (db.connections > 0) return `${db.connections} connection(s)`;
  if (db.owner) {
    if (db.owner.host !== hostname()) return `claimed on ${db.owner.host}`;
    return runningSince(db.owner.pid, db.owner.started) ? `its process ${db.owner.pid} runs` : null;
  }
  if (db.ageMs === undefined) return 'unclaimed, age unknown';
  return db.ageMs < UNCLAIMED_MIN_AGE_MS ? `unclaimed, ${Math.round(db.ageMs / 60_000)} min old` : null;
}

export async function listThrowawayDatabases(adminUrl = defaultAdminUrl()): Promise<ThrowawayDatabase[]> {
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    const rows = await admin<{ name: string; oid: number; comment: string | null; connections: number }[]>`
      SELECT d.datname AS name, d.oid::int AS oid, shobj_description(d.oid, 'pg_database') AS comment,
             (SELECT count(*)::int FROM pg_stat_activity a WHERE a.datid = d.oid) AS connections
      FROM pg_database d WHERE NOT d.datistemplate`;
    const found: ThrowawayDatabase[] = [];
    for (const row of rows.filter((r) => THROWAWAY_DATABASE.test(r.name))) {
      const claim = row.comment?.startsWith(CLAIM) ? /owner (\S+) (\d+) (\d+)$/.exec(row.comment) : null;
      const db: ThrowawayDatabase = { name: row.name, connections: row.connections };
      if (claim) db.owner = { host: claim[1] ?? '', pid: Number(claim[2]), started: claim[3] ?? '' };
      else db.ageMs = await ageOf(admin, row.oid);
      found.push(db);
    }
    return found;
  } finally {
    await admin.end();
  }
}

async function ageOf(admin: postgres.Sql, oid: number): Promise<number | undefined> {
  try {
    // PG_VERSION is written once, when the database is created.
    const [row] = await admin<{ modified: Date }[]>`
      SELECT (pg_stat_file('base/' || ${oid}::text || '/PG_VERSION')).modification AS modified`;
    return row ? Date.now() - row.modified.getTime() : undefined;
  } catch {
    return undefined; // not a superuser, or another layout
  }
}

/** Drops the throwaway databases of runs that are gone; returns their names. */
export async function sweepThrowawayDatabases(adminUrl = defaultAdminUrl()): Promise<string[]> {
  const leftovers = (await listThrowawayDatabases(adminUrl)).filter((db) => keepReason(db) === null);
  if (leftovers.length === 0) return [];
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  const dropped: string[] = [];
  try {
    for (const { name } of leftovers) {
      // Not FORCE: a run that connected since we looked keeps its database (the drop fails, we go on).
      await admin
        .unsafe(`DROP DATABASE IF EXISTS "${name}"`)
        .then(() => dropped.push(name))
        .catch(() => {});
    }
  } finally {
    await admin.end();
  }
  return dropped;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const dropped = await sweepThrowawayDatabases().catch((error: unknown) => {
    process.stderr.write(`sweeping leftover test databases failed: ${String(error)}\n`);
    return [];
  });
  process.stdout.write(
    dropped.length
      ? `dropped ${dropped.length} leftover test database(s) of runs that are gone: ${dropped.join(' ')}\n`
      : 'no leftover test databases\n',
  );
}
