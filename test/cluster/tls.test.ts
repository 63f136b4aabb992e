// TLS, the production path: the cluster's frontend serves a certificate from a self-signed CA this test makes
// (openssl). A worker process (workers/main.ts) and the `effect` CLI, configured only through TEMPORAL_ADDRESS,
// TEMPORAL_NAMESPACE and TEMPORAL_TLS_SERVER_CA_CERT_PATH / _SERVER_NAME, approve and run one effect to
// `recorded`; the same variables without TLS are refused. Every connection here, the harness's included, is
// made from those variables by client/temporal-connection.ts, the one function every process uses.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Connection } from '@temporalio/client';
import postgres from 'postgres';
import { describeTarget, resolveTemporalTarget } from '../../client/temporal-connection.js';
import { type Cluster, startCluster } from '../../harness/cluster/cluster.js';
import { type SimulatorProcess, startSimulator } from '../../harness/simulator/client.js';
import { startWorkerProcess, type WorkerProcess } from '../../harness/worker-process.js';
import { migrateLedger } from '../../ledger/migrate.js';
import { loadTemporalConfig } from '../../workers/config.js';
import { runCli } from '../support/cli.js';

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

describe('a cluster behind TLS (self-signed certificate)', { timeout: 300_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'effect-tls-'));
  const config = loadTemporalConfig();
  const dbName = `effect_ledger_tls_${randomBytes(4).toString('hex')}`;
  const databaseUrl = new URL(adminUrl);
  databaseUrl.pathname = `/${dbName}`;
  // No envconfig profile file: the processes see only the variables below (the machine's own must not leak in).
  const noProfile = { TEMPORAL_CONFIG_FILE: join(dir, 'no-envconfig.toml') };
  let cluster: Cluster;
  let simulator: SimulatorProcess;
  let worker: WorkerProcess | undefined;
  /** What the worker and CLI processes are given: the ledger, the task queue, and the TEMPORAL_* variables. */
  const stackFor = (temporalEnv: Record<string, string>) => ({
    databaseUrl: databaseUrl.toString(),
    namespace: cluster.namespace,
    taskQueue: `tls-${dbName}`,
    env: { address: cluster.address },
    simulator: { url: simulator.url },
    temporalEnv: { ...noProfile, ...temporalEnv },
  });
  before(async () => {
    [cluster, simulator] = await Promise.all([
      startCluster({ config, tls: testCertificates(dir) }),
      startSimulator(),
      migrateLedger(databaseUrl.toString()),
    ]);
  });
  after(async () => {
    await Promise.allSettled([worker?.kill(), cluster?.stop(), simulator?.stop()]);
    const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
    await admin.unsafe(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`).finally(() => admin.end());
    rmSync(dir, { recursive: true, force: true });
  });

  test('the TEMPORAL_* variables name the CA and the server name; without them the connection is refused', async () => {
    assert.deepEqual(Object.keys(cluster.temporalEnv).sort(), [
      'TEMPORAL_ADDRESS',
      'TEMPORAL_NAMESPACE',
      'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
      'TEMPORAL_TLS_SERVER_NAME',
    ]);
    assert.match(describeTarget(cluster.target), / TLS$/);
    const { TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE } = cluster.temporalEnv;
    const plain = resolveTemporalTarget({ env: { ...noProfile, TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE } });
    assert.match(describeTarget(plain), / plaintext$/);
    const connection = await Connection.connect({ ...plain.connectionOptions, connectTimeout: 3000 }).catch(
      (error: unknown) => error,
    );
    if (connection instanceof Connection) {
      await assert.rejects(connection.workflowService.getSystemInfo({}));
      await connection.close();
    } else {
      assert.ok(connection instanceof Error);
    }
  });

  test('a worker process and the CLI, configured by TEMPORAL_* alone, record one effect over TLS', async () => {
    const stack = stackFor(cluster.temporalEnv);
    worker = await startWorkerProcess(stack, simulator.url, { env: stack.temporalEnv, keepOutput: true });
    assert.match(worker.output(), new RegExp(`namespace=${cluster.namespace} taskQueue=${stack.taskQueue} TLS`));
    const request = {
      effectId: 'task:over-tls',
      destination: 'keyed-api',
      operation: 'task.create',
      payload: { title: 'Prepare preview', request: 'request-tls' },
      approvedBy: 'tls@example.com',
      authorizationRef: 'TLS-1',
    };
    const approve = await runCli(stack, ['approve', '--json'], JSON.stringify(request), stack.temporalEnv);
    assert.equal(approve.code, 0, approve.stderr);

    // `status` reads the ledger and asks Temporal over TLS: it answers (no "ledger only"; the live view itself
    // is null once the workflow has closed).
    const deadline = Date.now() + 60_000;
    let report: { trail: { effect: { stage: string } }; live?: unknown; liveUnavailable?: string } | undefined;
    while (Date.now() < deadline) {
      const status = await runCli(stack, ['status', 'task:over-tls', '--json'], undefined, stack.temporalEnv);
      assert.equal(status.code, 0, status.stderr);
      report = JSON.parse(status.stdout);
      if (report?.trail.effect.stage === 'recorded') break;
      await new Promise((done) => setTimeout(done, 500));
    }
    assert.equal(report?.trail.effect.stage, 'recorded', JSON.stringify(report));
    assert.equal(report?.liveUnavailable, undefined, 'Temporal answered the CLI over TLS');
    const posts = await simulator.requests({ method: 'POST', path: '/v1/objects' });
    assert.equal(posts.length, 1);
    assert.equal(posts[0]?.idempotencyKey, 'task:over-tls');
  });

  test('the CLI without the TLS variables cannot approve, and its status sees the ledger only', async () => {
    const { TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE } = cluster.temporalEnv;
    const stack = stackFor({ TEMPORAL_ADDRESS: TEMPORAL_ADDRESS!, TEMPORAL_NAMESPACE: TEMPORAL_NAMESPACE! });
    const request = {
      effectId: 'task:plaintext',
      destination: 'keyed-api',
      operation: 'task.create',
      payload: { title: 'Never sent', request: 'request-plaintext' },
      approvedBy: 'tls@example.com',
      authorizationRef: 'TLS-2',
    };
    const approve = await runCli(stack, ['approve'], JSON.stringify(request), stack.temporalEnv);
    assert.equal(approve.code, 1, approve.stdout);
    assert.match(approve.stderr, /Failed to start Workflow/);
    const posts = await simulator.requests({ method: 'POST', path: '/v1/objects' });
    assert.equal(posts.length, 1, 'nothing more was sent');
    const status = await runCli(stack, ['status', 'task:over-tls', '--json'], undefined, stack.temporalEnv);
    assert.equal(status.code, 0, status.stderr);
    const report = JSON.parse(status.stdout) as { trail: { effect: { stage: string } }; liveUnavailable?: string };
    assert.equal(report.trail.effect.stage, 'recorded');
    assert.ok(report.liveUnavailable, 'Temporal did not answer a plaintext client');
  });
});
