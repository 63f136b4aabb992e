// A database connection cut under a query (an operator's pg_terminate_backend, a failover) costs only the
// activities that used it: they fail, and are retried or become UNKNOWN. What the driver raises outside any
// query for the dead connection must not take the whole worker, and every call it has in flight, down.

const CONNECTION_LOST_CODES = new Set([
  '57P01',
  '57P02',
  '57P03',
  '08000',
  '08003',
  '08006',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'ECONNRESET',
]);

/**
 * A stray rejection carrying a connection-loss code, or postgres.js 3.4's deferred write landing on a socket
 * its close handler already dropped (`TypeError … reading 'write'` in `nextWrite`, seen in chaos seed
 * 20261130 right after pg_terminate_backend): the queries on that connection fail on their own.
 */
export function isLostConnection(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && CONNECTION_LOST_CODES.has(code)) return true;
  return (
    error instanceof TypeError &&
    /reading 'write'/.test(error.message) &&
    /nextWrite[\s\S]*postgres[\\/]src[\\/]connection\.js/.test(error.stack ?? '')
  );
}
