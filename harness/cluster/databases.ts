// The cluster's two PostgreSQL databases (history and visibility), created and migrated with the server's
// own schema tool, from the schema the server module ships (postgresql/v12: advanced visibility on
// PostgreSQL). Migrating again is a no-op, so a kept pair (`npm run cluster`'s) is brought up to date.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import postgres from 'postgres';
import { claimDatabase } from '../../stack/test-databases.js';

export interface ClusterDatabases {
  temporal: string;
  visibility: string;
}

export interface PostgresTarget {
  host: string;
  port: number;
  user: string;
  password: string;
}

/** The admin connection the cluster's databases are made from (the machine's PostgreSQL, trust auth). */
export function postgresTarget(adminUrl: string): PostgresTarget {
  const url = new URL(adminUrl);
  return {
    host: url.hostname,
    port: Number(url.port || 5432),
    user: decodeURIComponent(url.username || 'postgres'),
    password: decodeURIComponent(url.password),
  };
}

export function databasesFor(suffix: string): ClusterDatabases {
  return { temporal: `temporal_${suffix}`, visibility: `temporal_visibility_${suffix}` };
}

function runSqlTool(sqlTool: string, pg: PostgresTarget, db: string, args: string[]): Promise<void> {
  const base = ['--plugin', 'postgres12', '--ep', pg.host, '--port', String(pg.port), '--user', pg.user];
  if (pg.password) base.push('--password', pg.password);
  return new Promise((resolve, reject) => {
    const child = spawn(sqlTool, [...base, '--db', db, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk));
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0
        ? resolve()
        : reject(new Error(`temporal-sql-tool ${args[0]} on ${db} failed (${code}):\n${output.slice(-2000)}`)),
    );
  });
}

async function migrateOne(
  sqlTool: string,
  pg: PostgresTarget,
  adminUrl: string,
  db: string,
  schemaDir: string,
): Promise<void> {
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    const [exists] = await admin`SELECT 1 FROM pg_database WHERE datname = ${db}`;
    if (!exists) {
      await runSqlTool(sqlTool, pg, db, ['create-database', '--defaultdb', 'postgres']);
      await claimDatabase(db, adminUrl);
    }
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${db}`;
  const conn = postgres(url.toString(), { max: 1, onnotice: () => {} });
  try {
    const [row] = await conn<{ t: string | null }[]>`SELECT to_regclass('schema_version')::text AS t`;
    if (!row?.t) await runSqlTool(sqlTool, pg, db, ['setup-schema', '--version', '0.0']);
  } finally {
    await conn.end();
  }
  await runSqlTool(sqlTool, pg, db, ['update-schema', '--schema-dir', schemaDir]);
}

/** Creates (if absent) and migrates both databases; the two run side by side. */
export async function migrateClusterDatabases(options: {
  sqlTool: string;
  adminUrl: string;
  schemaRoot: string;
  databases: ClusterDatabases;
}): Promise<void> {
  const pg = postgresTarget(options.adminUrl);
  await Promise.all([
    migrateOne(
      options.sqlTool,
      pg,
      options.adminUrl,
      options.databases.temporal,
      join(options.schemaRoot, 'temporal/versioned'),
    ),
    migrateOne(
      options.sqlTool,
      pg,
      options.adminUrl,
      options.databases.visibility,
      join(options.schemaRoot, 'visibility/versioned'),
    ),
  ]);
}

export async function dropClusterDatabases(adminUrl: string, databases: ClusterDatabases): Promise<void> {
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    for (const db of [databases.temporal, databases.visibility]) {
      await admin.unsafe(`DROP DATABASE IF EXISTS "${db}" WITH (FORCE)`);
    }
  } finally {
    await admin.end();
  }
}
