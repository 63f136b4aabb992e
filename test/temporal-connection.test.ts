// How every process resolves its Temporal target: the TEMPORAL_* variables over an envconfig profile over
// temporal.yaml (client/temporal-connection.ts). No server is needed: resolution is pure configuration.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { describeTarget, resolveTemporalTarget } from '../client/temporal-connection.js';

const project = { address: '127.0.0.1:7233', namespace: 'default', taskQueue: 'effect-ledger' };
const dir = mkdtempSync(join(tmpdir(), 'envconfig-'));
const file = (name: string, text: string) => {
  writeFileSync(join(dir, name), text);
  return join(dir, name);
};
const toml = file(
  'temporal.toml',
  `[profile.default]
address = "default-profile.example:7233"
namespace = "from-default-profile"

[profile.prod]
address = "prod.example:7233"
namespace = "prod-ns"
api_key = "profile-key"

[profile.prod.grpc_meta]
x-team = "payments"
`,
);
const cert = file('client.pem', '-----BEGIN CERTIFICATE-----\nclient\n-----END CERTIFICATE-----\n');
const key = file('client.key', '-----BEGIN PRIVATE KEY-----\nkey\n-----END PRIVATE KEY-----\n');
const ca = file('ca.pem', '-----BEGIN CERTIFICATE-----\nca\n-----END CERTIFICATE-----\n');
// No profile file unless a test names one: the machine's own ~/.config/temporalio must not leak in.
const noFile = { TEMPORAL_CONFIG_FILE: join(dir, 'absent.toml') };
const resolve = (env: Record<string, string>, profile?: string) => resolveTemporalTarget({ env, project, profile });

describe('Temporal target resolution', { timeout: 10_000 }, () => {
  test('nothing set: temporal.yaml (the local dev server), plaintext', () => {
    assert.deepEqual(resolve(noFile), {
      connectionOptions: { address: '127.0.0.1:7233' },
      namespace: 'default',
      taskQueue: 'effect-ledger',
    });
  });

  test("a config file's default profile wins over temporal.yaml", () => {
    const target = resolve({ TEMPORAL_CONFIG_FILE: toml });
    assert.equal(target.connectionOptions.address, 'default-profile.example:7233');
    assert.equal(target.namespace, 'from-default-profile');
    assert.equal(target.taskQueue, 'effect-ledger', 'the task queue is ours, not a profile setting');
  });

  test('TEMPORAL_PROFILE (or the option) selects a profile; an API key turns TLS on; gRPC metadata carries over', () => {
    for (const target of [
      resolve({ TEMPORAL_CONFIG_FILE: toml, TEMPORAL_PROFILE: 'prod' }),
      resolve({ TEMPORAL_CONFIG_FILE: toml }, 'prod'),
    ]) {
      assert.deepEqual(target.connectionOptions, {
        address: 'prod.example:7233',
        apiKey: 'profile-key',
        tls: true,
        metadata: { 'x-team': 'payments' },
      });
      assert.equal(target.namespace, 'prod-ns');
    }
    assert.throws(() => resolve({ TEMPORAL_CONFIG_FILE: toml, TEMPORAL_PROFILE: 'staging' }), /staging/);
  });

  test('the variables win over the profile, and TEMPORAL_TASK_QUEUE over temporal.yaml', () => {
    const target = resolve({
      TEMPORAL_CONFIG_FILE: toml,
      TEMPORAL_PROFILE: 'prod',
      TEMPORAL_ADDRESS: 'env.example:7233',
      TEMPORAL_NAMESPACE: 'env-ns',
      TEMPORAL_API_KEY: 'env-key',
      TEMPORAL_TASK_QUEUE: 'effects-blue',
    });
    assert.equal(target.connectionOptions.address, 'env.example:7233');
    assert.equal(target.namespace, 'env-ns');
    assert.equal(target.connectionOptions.apiKey, 'env-key');
    assert.equal(target.taskQueue, 'effects-blue');
  });

  test('TEMPORAL_TLS_* give mTLS: client certificate and key, the CA that signed a self-signed server, its name', () => {
    const target = resolve({
      ...noFile,
      TEMPORAL_ADDRESS: 'cluster.internal:7233',
      TEMPORAL_TLS_CLIENT_CERT_PATH: cert,
      TEMPORAL_TLS_CLIENT_KEY_PATH: key,
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: ca,
      TEMPORAL_TLS_SERVER_NAME: 'temporal.internal',
    });
    const tls = target.connectionOptions.tls;
    assert.ok(tls && typeof tls === 'object');
    assert.equal(tls.serverNameOverride, 'temporal.internal');
    const text = (bytes: Uint8Array | undefined) => Buffer.from(bytes ?? []).toString();
    assert.equal(text(tls.serverRootCACertificate), readFileSync(ca, 'utf8'));
    assert.equal(text(tls.clientCertPair?.crt), readFileSync(cert, 'utf8'));
    assert.equal(text(tls.clientCertPair?.key), readFileSync(key, 'utf8'));
    assert.equal(describeTarget(target), 'cluster.internal:7233 namespace=default taskQueue=effect-ledger mTLS');
  });

  test("TEMPORAL_TLS=true alone: TLS against the system roots; TEMPORAL_TLS=false turns a profile's TLS off", () => {
    assert.ok(resolve({ ...noFile, TEMPORAL_TLS: 'true' }).connectionOptions.tls);
    const off = resolve({ TEMPORAL_CONFIG_FILE: toml, TEMPORAL_PROFILE: 'prod', TEMPORAL_TLS: 'false' });
    assert.equal(off.connectionOptions.tls, false);
  });

  test('the start-up line names the API key only by its presence', () => {
    const line = describeTarget(resolve({ ...noFile, TEMPORAL_API_KEY: 'sk-very-secret' }));
    assert.equal(line, '127.0.0.1:7233 namespace=default taskQueue=effect-ledger TLS api-key');
    assert.doesNotMatch(line, /very-secret/);
  });
});
