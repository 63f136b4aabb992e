// TLS: the cluster's frontend serves a certificate from a self-signed CA this test makes (openssl); a
// client and a worker that trust the CA run one effect to `recorded`, and a plaintext client is refused.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import postgres from 'postgres';
import { createDestinations } from '../../activities/destinations/registry.js';
import { EffectLedgerClient } from '../../client/effect-ledger-client.js';
import { type Cluster, startCluster } from '../../harness/cluster/cluster.js';
import { type SimulatorProcess, startSimulator } from '../../harness/simulator/client.js';
import { type Ledger, openLedger } from '../../ledger/db.js';
import { migrateLedger } from '../../ledger/migrate.js';
import { loadTemporalConfig } from '../../workers/config.js';
import { createEffectWorker } from '../../workers/effect-worker.js';

const adminUrl = process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/**
 * A self-signed CA made here, and the frontend's certificate for localhost and 127.0.0.1 signed by it, valid
 * for a day. (A lone self-signed certificate is a CA to rustls, which refuses it as the server's own.)
 */
function testCertificates(dir: string) {
  const file = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'ignore' });
  const ecKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(
    'req',
    '-x509',
    ...ecKey,
    '-keyout',
    file('ca.key'),
    '-out',
    file('ca.pem'),
    '-days',
    '1',
    '-subj',
    '/CN=test CA',
  );
  openssl('req', '-new', ...ecKey, '-keyout', file('key.pem'), '-out', file('server.csr'), '-subj', '/CN=localhost');
  writeFileSync(
    file('server.ext'),
    'basicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth\nsubjectAltName=DNS:localhost,IP:127.0.0.1\n',
  );
  openssl(
    'x509',
    '-req',
    '-in',
    file('server.csr'),
    '-CA',
    file('ca.pem'),
    '-CAkey',
    file('ca.key'),
    '-CAcreateserial',
    '-out',
    file('cert.pem'),
    '-days',
    '1',
    '-extfile',
    file('server.ext'),
  );
  return { certFile: file('cert.pem'), keyFile: file('key.pem'), caFile: file('ca.pem'), serverName: 'localhost' };
}

describe('a cluster behind TLS (self-signed certificate)', { timeout: 240_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'effect-tls-'));
  const config = loadTemporalConfig();
  const dbName = `effect_ledger_tls_${randomBytes(4).toString('hex')}`;
  const databaseUrl = new URL(adminUrl);
  databaseUrl.pathname = `/${dbName}`;
  let cluster: Cluster;
  let simulator: SimulatorProcess;
  let ledger: Ledger;
  before(async () => {
    [cluster, simulator] = await Promise.all([
      startCluster({ config, tls: testCertificates(dir) }),
      startSimulator(),
      migrateLedger(databaseUrl.toString()),
    ]);
    ledger = openLedger(databaseUrl.toString());
  });
  after(async () => {
    await Promise.allSettled([cluster?.stop(), simulator?.stop(), ledger?.close()]);
    const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
    await admin.unsafe(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`).finally(() => admin.end());
    rmSync(dir, { recursive: true, force: true });
  });

  test('a plaintext client is refused', async () => {
    const plain = await Connection.connect({ address: cluster.address, connectTimeout: 3000 }).catch(
      (error: unknown) => error,
    );
    if (plain instanceof Connection) {
      await assert.rejects(plain.workflowService.getSystemInfo({}));
      await plain.close();
    } else {
      assert.ok(plain instanceof Error);
    }
  });

  test('a client and a worker over TLS run one effect to recorded', async () => {
    const { tls, address } = cluster.connectionOptions;
    assert.ok(tls, 'the cluster has TLS');
    const connection = await Connection.connect({ address, tls });
    const nativeConnection = await NativeConnection.connect({ address, tls });
    try {
      const client = new Client({ connection, namespace: cluster.namespace });
      const taskQueue = `tls-${randomBytes(4).toString('hex')}`;
      const effects = new EffectLedgerClient({ client, db: ledger.db, taskQueue });
      const worker = await createEffectWorker({
        connection: nativeConnection,
        namespace: cluster.namespace,
        taskQueue,
        db: ledger.db,
        destinations: createDestinations({ providerUrl: simulator.url }),
        effects,
      });
      const result = await worker.runUntil(async () => {
        await effects.approve({
          effectId: 'task:over-tls',
          destination: 'keyed-api',
          operation: 'task.create',
          payload: { title: 'Prepare preview', request: 'request-tls' },
          approvedBy: 'tls@example.com',
          authorizationRef: 'TLS-1',
        });
        return effects.result('task:over-tls');
      });
      assert.equal(result.stage, 'recorded');
      const posts = await simulator.requests({ method: 'POST', path: '/v1/objects' });
      assert.equal(posts.length, 1);
      assert.equal(posts[0]?.idempotencyKey, 'task:over-tls');
    } finally {
      await Promise.allSettled([connection.close(), nativeConnection.close()]);
    }
  });
});
