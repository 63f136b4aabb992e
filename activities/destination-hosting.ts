// Where a destination is hosted: a worker hosts the adapters it was configured for. An effect for a destination
// this worker does not host is never failed for it. Its attempt is not written (attemptOnce says so, and the
// workflow waits, visibly, for a worker that hosts it); a readback or a check of a person's evidence fails
// retryably, so Temporal hands it again until a worker that hosts the destination takes it. The one place that
// decides; a task queue per destination only makes it rarer.
import { ApplicationFailure } from '@temporalio/activity';
import type { DestinationAdapter } from '../domain/destination-contract.js';
import type { Destinations } from './destinations/registry.js';

/** The retryable failure a worker that does not host a destination answers a readback with. */
export const DESTINATION_NOT_HOSTED = 'DestinationNotHosted';

export function hostedAdapter(destinations: Destinations, name: string): DestinationAdapter | undefined {
  return Object.hasOwn(destinations, name) ? destinations[name] : undefined;
}

/** Why this worker cannot carry it, in words an operator reads in the Web UI and `effect status`. */
export function notHostedReason(destinations: Destinations, name: string): string {
  const hosted = Object.keys(destinations);
  return `destination ${name} is not hosted by this worker (it hosts: ${hosted.length ? hosted.join(', ') : 'none'})`;
}

/** The adapter, or a retryable failure: Temporal hands the activity again, to a worker that may host it. */
export function requireHosted(destinations: Destinations, name: string): DestinationAdapter {
  const adapter = hostedAdapter(destinations, name);
  if (!adapter)
    throw ApplicationFailure.retryable(
      `${notHostedReason(destinations, name)}; retried until a worker that hosts it takes it`,
      DESTINATION_NOT_HOSTED,
    );
  return adapter;
}
