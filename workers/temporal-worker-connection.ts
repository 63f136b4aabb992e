// The worker's own (native) connection to Temporal, to the target every other process resolves
// (client/temporal-connection.ts): the same address, namespace, TLS and API key.
import { NativeConnection } from '@temporalio/worker';
import { resolveTemporalTarget, type TemporalTarget } from '../client/temporal-connection.js';

export function connectWorkerNative(target: TemporalTarget = resolveTemporalTarget()): Promise<NativeConnection> {
  return NativeConnection.connect(target.connectionOptions);
}
