// Exports one effect's workflow history from any Temporal server (dev, self-hosted, Temporal Cloud), to
// add it to the replay set: a production history is the best guard for the effects running there now.
//   npm run capture-history -- <effectId> --address prod.tmprl.cloud:7233 --namespace prod.abc12 \
//     --api-key "$TEMPORAL_API_KEY" --workflow-version 1
// writes test/histories/v1.prod-<effectId>.json. `temporal workflow show -w <effectId> -o json` writes
// the same JSON.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, Connection, type ConnectionOptions, WorkflowNotFoundError } from '@temporalio/client';
import { Command, InvalidArgumentError } from 'commander';
import {
  captureHistory,
  eventTypes,
  HISTORIES_DIR,
  historyFileName,
  readHistoryFile,
} from '../harness/histories/history-file.js';
import { loadTemporalConfig } from '../workers/config.js';
import { EFFECT_WORKFLOW_VERSION } from '../workflows/version.js';

interface Options {
  address: string;
  namespace: string;
  apiKey?: string;
  tls?: boolean;
  tlsCertPath?: string;
  tlsKeyPath?: string;
  workflowVersion: number;
  name?: string;
  out?: string;
}

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('a positive integer');
  return n;
}

function connectionOptions(o: Options): ConnectionOptions {
  const mtls =
    o.tlsCertPath && o.tlsKeyPath
      ? { clientCertPair: { crt: readFileSync(o.tlsCertPath), key: readFileSync(o.tlsKeyPath) } }
      : undefined;
  const tls = mtls ?? (o.tls || o.apiKey ? true : undefined);
  return { address: o.address, ...(tls ? { tls } : {}), ...(o.apiKey ? { apiKey: o.apiKey } : {}) };
}

const config = loadTemporalConfig();
const program = new Command('capture-history')
  .description('Export an effect workflow history (the workflow ID is the effect ID) as replayable JSON')
  .argument('<effectId>')
  .option('--address <host:port>', 'Temporal frontend (env TEMPORAL_ADDRESS, else temporal.yaml)', config.address)
  .option('--namespace <ns>', 'namespace (env TEMPORAL_NAMESPACE, else temporal.yaml)', config.namespace)
  .option(
    '--api-key <key>',
    'API key (Temporal Cloud); implies TLS (env TEMPORAL_API_KEY)',
    process.env.TEMPORAL_API_KEY,
  )
  .option('--tls', 'connect with TLS (server certificate checked against the system roots)')
  .option('--tls-cert-path <file>', 'client certificate for mTLS')
  .option('--tls-key-path <file>', 'client key for mTLS')
  .option(
    '--workflow-version <n>',
    'the effect workflow version that ran it (the file name says so)',
    positiveInt,
    EFFECT_WORKFLOW_VERSION,
  )
  .option('--name <name>', 'the file name part after the version (default prod-<effectId>)')
  .option('--out <file>', 'write here instead of test/histories/v<version>.<name>.json')
  .action(async (effectId: string, o: Options) => {
    const connection = await Connection.connect(connectionOptions(o));
    try {
      const out = o.out ?? join(HISTORIES_DIR, historyFileName(o.workflowVersion, o.name ?? `prod-${effectId}`));
      try {
        await captureHistory(new Client({ connection, namespace: o.namespace }), effectId, out);
      } catch (error) {
        if (!(error instanceof WorkflowNotFoundError)) throw error;
        process.stderr.write(
          `no workflow history for effect ${effectId} in namespace ${o.namespace} at ${o.address}\n`,
        );
        process.exitCode = 4;
        return;
      }
      process.stdout.write(`${out} (${eventTypes(readHistoryFile(out)).length} events)\n`);
    } finally {
      await connection.close();
    }
  });
await program.parseAsync();
