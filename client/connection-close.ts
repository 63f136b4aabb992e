// Closing a Temporal connection while calls on it are still retrying (issue 29).
//
// @temporalio/client retries a failed call in its gRPC retry interceptor (grpc-retry.ts, 1.24.0, the latest
// release), which waits between attempts with setTimeout; Connection.close() closes the channel and leaves
// those timers running. An attempt that starts after the close asks the closed channel for a call, and
// grpc-js throws "Channel has been shut down" inside the timer: an uncaught exception no try/catch of ours
// can reach, and the process dies (a backend closing its ledger during a Temporal outage, a worker on
// SIGTERM). The SDK's abort signal (withAbortSignal) does not help: it cancels a call's first attempt only,
// not a retry waiting on its timer, nor one under way.
//
// So every connection we open carries a gate on either side of the SDK's own retry interceptor: outside it,
// it counts the calls in flight; inside it, it sees every attempt. Closing shuts the gate: the attempts under
// way are cancelled, a later one (a retry whose timer fires) is cancelled as it starts, and the channel is
// closed only once every call has settled. A call pending at the close rejects, typed (the SDK's
// ServiceError, caused by gRPC CANCELLED "…closed…"); no attempt reaches a closed channel, and no error is
// swallowed anywhere — rather than a handler that recognises the SDK's error after the fact.
import { InterceptingCall, type Interceptor, status } from '@grpc/grpc-js';
import {
  type Client,
  Connection,
  type ConnectionOptions,
  type ConnectionPlugin,
  defaultGrpcRetryOptions,
  makeGrpcRetryInterceptor,
} from '@temporalio/client';

/** The details of the gRPC CANCELLED status a call pending at the close rejects with. */
export const CONNECTION_CLOSED = 'effect-ledger closed this Temporal connection';

class CloseGate {
  #shut = false;
  #calls = 0;
  readonly #attempts = new Set<InterceptingCall>();
  #drained: (() => void) | undefined;
  #closing: Promise<void> | undefined;

  /** Outermost: one count per call, released when the call settles (after all its retries). */
  readonly outer: Interceptor = (options, nextCall) =>
    new InterceptingCall(nextCall(options), {
      start: (metadata, _listener, next) => {
        this.#calls++;
        next(metadata, {
          onReceiveStatus: (callStatus, nextStatus) => {
            nextStatus(callStatus);
            if (--this.#calls === 0) this.#drained?.();
          },
        });
      },
    });

  /** Innermost: every attempt, the retries' included; once shut, an attempt is cancelled as it starts. */
  readonly inner: Interceptor = (options, nextCall) => {
    const attempt: InterceptingCall = new InterceptingCall(nextCall(options), {
      start: (metadata, _listener, next) => {
        next(metadata, {
          onReceiveStatus: (attemptStatus, nextStatus) => {
            this.#attempts.delete(attempt);
            nextStatus(attemptStatus);
          },
        });
        if (this.#shut) attempt.cancelWithStatus(status.CANCELLED, CONNECTION_CLOSED);
        else this.#attempts.add(attempt);
      },
    });
    return attempt;
  };

  /** Cancels every call, pending retries included, and resolves once all have settled; the channel stays open. */
  settle(): Promise<void> {
    this.#closing ??= (async () => {
      this.#shut = true;
      for (const attempt of this.#attempts) attempt.cancelWithStatus(status.CANCELLED, CONNECTION_CLOSED);
      // A retry waiting on its timer settles when the timer fires (at most the SDK's 5 s cap, jittered).
      if (this.#calls > 0) await new Promise<void>((resolve) => (this.#drained = resolve));
    })();
    return this.#closing;
  }
}

const gates = new WeakMap<Interceptor, CloseGate>();

/** Connection options with the close gate around the retry interceptor (the SDK's default one if none given). */
export function withCloseGate(options: ConnectionOptions): ConnectionOptions {
  if (options.interceptors?.some((interceptor) => gates.has(interceptor))) return options;
  const gate = new CloseGate();
  gates.set(gate.outer, gate);
  const retry = options.interceptors ?? [makeGrpcRetryInterceptor(defaultGrpcRetryOptions())];
  return { ...options, interceptors: [gate.outer, ...retry, gate.inner] };
}

/** The gate for connections the SDK opens itself (TestWorkflowEnvironment's, in the harness). */
export const closeGatePlugin: ConnectionPlugin = {
  name: 'effect-ledger-close-gate',
  configureConnection: withCloseGate,
};

/**
 * Cancels every call on the connection, pending retries included, and waits until all have settled, leaving
 * the channel open for whoever closes it (TestWorkflowEnvironment.teardown()). A connection without the gate
 * (not opened through it) is left as it is.
 */
export async function settleTemporalCalls(connection: Connection): Promise<void> {
  const gate = connection.options.interceptors.map((interceptor) => gates.get(interceptor)).find(Boolean);
  await gate?.settle();
}

/** The one close for a connection we opened: calls settled first (rejected if pending), then the channel. */
export async function closeTemporalConnection(connection: Connection): Promise<void> {
  await settleTemporalCalls(connection);
  await connection.close();
}

/** closeTemporalConnection for a client's connection (a client on a worker's NativeConnection just closes). */
export async function closeTemporalClient(client: Client): Promise<void> {
  if (client.connection instanceof Connection) await closeTemporalConnection(client.connection);
  else await client.connection.close();
}
