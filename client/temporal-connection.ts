// How every process of ours reaches Temporal — the worker, the CLI, backend code, the scripts — resolved in
// one place and the way every Temporal tool resolves it:
//   1. the TEMPORAL_* variables: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS,
//      TEMPORAL_TLS_CLIENT_CERT_PATH / _DATA, TEMPORAL_TLS_CLIENT_KEY_PATH / _DATA,
//      TEMPORAL_TLS_SERVER_CA_CERT_PATH / _DATA, TEMPORAL_TLS_SERVER_NAME, TEMPORAL_GRPC_META_*;
//   2. a profile of the envconfig TOML file (TEMPORAL_PROFILE, default "default"; the file is
//      TEMPORAL_CONFIG_FILE, default ~/.config/temporalio/temporal.toml — the one `temporal config` writes);
//   3. temporal.yaml's address and namespace: the local dev server.
// The task queue is ours: TEMPORAL_TASK_QUEUE, else temporal.yaml. An API key turns TLS on, as in the SDK.
import { Client, Connection, type TLSConfig } from '@temporalio/client';
import { type ConfigDataSource, loadClientConfigProfile, toClientOptions } from '@temporalio/envconfig';
import { withCloseGate } from './connection-close.js';
import { loadTemporalConfig, type TemporalConfig } from './temporal-config.js';

export interface TemporalTarget {
  /** For Connection.connect and the worker's NativeConnection.connect alike (the same fields). */
  connectionOptions: {
    address: string;
    tls?: TLSConfig | boolean;
    apiKey?: string;
    metadata?: Record<string, string>;
  };
  namespace: string;
  taskQueue: string;
}

export interface TemporalTargetOptions {
  /** Default process.env. */
  env?: NodeJS.ProcessEnv;
  /** The envconfig profile; default TEMPORAL_PROFILE, then "default". */
  profile?: string;
  /** The envconfig TOML (a path or its text); default TEMPORAL_CONFIG_FILE, then the user's config file. */
  configSource?: ConfigDataSource;
  /** The project's own footprint; default temporal.yaml. */
  project?: Pick<TemporalConfig, 'address' | 'namespace' | 'taskQueue'>;
}

export function resolveTemporalTarget(options: TemporalTargetOptions = {}): TemporalTarget {
  const env = options.env ?? process.env;
  const project = options.project ?? loadTemporalConfig(undefined, {});
  const profile = loadClientConfigProfile({
    profile: options.profile,
    configSource: options.configSource,
    overrideEnvVars: definedOnly(env),
  });
  const { connectionOptions, namespace } = toClientOptions(profile);
  return {
    connectionOptions: {
      address: connectionOptions.address ?? project.address,
      ...(connectionOptions.tls != null ? { tls: connectionOptions.tls } : {}),
      ...(connectionOptions.apiKey !== undefined ? { apiKey: connectionOptions.apiKey } : {}),
      ...(profile.grpcMeta ? { metadata: profile.grpcMeta } : {}),
    },
    namespace: namespace ?? project.namespace,
    taskQueue: env.TEMPORAL_TASK_QUEUE ?? project.taskQueue,
  };
}

/** One line for start-up logs: where, which namespace, whether TLS and a key are in use — never the key itself. */
export function describeTarget({ connectionOptions: c, namespace, taskQueue }: TemporalTarget): string {
  const tls = c.tls ? (typeof c.tls === 'object' && c.tls.clientCertPair ? 'mTLS' : 'TLS') : 'plaintext';
  return `${c.address} namespace=${namespace} taskQueue=${taskQueue} ${tls}${c.apiKey ? ' api-key' : ''}`;
}

export interface ConnectOptions {
  /** Connect on first use, so ledger-only reads (list, status) answer while Temporal is unreachable. */
  lazy?: boolean;
}

/**
 * A connection to Temporal that closes safely under retrying calls (connection-close.ts): close it with
 * `closeTemporalConnection()`, never `connection.close()` alone.
 */
export async function openTemporalConnection(
  connectionOptions: TemporalTarget['connectionOptions'] & { connectTimeout?: number },
  { lazy = false }: ConnectOptions = {},
): Promise<Connection> {
  const options = withCloseGate(connectionOptions);
  return lazy ? Connection.lazy(options) : await Connection.connect(options);
}

/** A Temporal client for the target; close it with `closeTemporalClient(client)` (connection-close.ts). */
export async function connectTemporalClient(
  target: TemporalTarget = resolveTemporalTarget(),
  options: ConnectOptions = {},
): Promise<Client> {
  const connection = await openTemporalConnection(target.connectionOptions, options);
  return new Client({ connection, namespace: target.namespace });
}

function definedOnly(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined));
}
