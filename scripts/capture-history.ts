// Exports one effect's workflow history from any Temporal server (dev, self-hosted, Temporal Cloud), to
// add it to the replay set: a production history is the best guard for the effects running there now.
//   npm run capture-history -- <effectId> --address prod.tmprl.cloud:7233 --namespace prod.abc12 \
//     --api-key "$TEMPORAL_API_KEY" --workflow-version 1
// writes test/histories/v1.prod-<effectId>.json. `temporal workflow show -w <effectId> -o json` writes
// the same JSON.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { WorkflowNotFoundError } from '@temporalio/client';
import { Command, InvalidArgumentError } from 'commander';
import { closeTemporalClient } from '../client/connection-close.js';
import { connectTemporalClient, resolveTemporalTarget, type TemporalTarget } from '../client/temporal-connection.js';
import {
  captureHistory,
  eventTypes,
  HISTORIES_DIR,
  historyFileName,
  readHistoryFile,
} from '../harness/histories/history-file.js';
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

/** The flags, over what the environment and the envconfig profile resolve (client/temporal-connection.ts). */
function target(o: Options, resolved: TemporalTarget): TemporalTarget {
  const mtls =
    o.tlsCertPath && o.tlsKeyPath
      ? { clientCertPair: { crt: readFileSync(o.tlsCertPath), key: readFileSync(o.tlsKeyPath) } }
      : undefined;
  const tls = mtls ?? (o.tls || o.apiKey ? true : resolved.connectionOptions.tls);
  return {
    ...resolved,
    namespace: o.namespace,
    connectionOptions: {
      ...resolved.connectionOptions,
      address: o.address,
      ...(tls ? { tls } : {}),
      ...(o.apiKey ? { apiKey: o.apiKey } : {}),
    },
  };
}

const config = resolveTemporalTarget();
const program = new Command('capture-history')
  .description('Export an effect workflow history (the workflow ID is the effect ID) as replayable JSON')
  .argument('<effectId>')
  .option(
    '--address <host:port>',
    'Temporal frontend (env TEMPORAL_ADDRESS, else the envconfig profile, else temporal.yaml)',
    config.connectionOptions.address,
  )
  .option(
    '--namespace <ns>',
    'namespace (env TEMPORAL_NAMESPACE, else the profile, else temporal.yaml)',
    config.namespace,
  )
  .option('--api-key <key>', 'API key (Temporal Cloud); implies TLS (default: env TEMPORAL_API_KEY or the profile)')
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
    const client = await connectTemporalClient(target(o, config));
    try {
      const out = o.out ?? join(HISTORIES_DIR, historyFileName(o.workflowVersion, o.name ?? `prod-${effectId}`));
      try {
        await captureHistory(client, effectId, out);
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
      await closeTemporalClient(client);
    }
  });
await program.parseAsync();
