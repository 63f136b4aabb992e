// PLANTED, test-only: the keyed-api adapter with one classification wrong, the mistake the conformance kit
// must catch: a call that timed out waiting for the answer is reported "not sent", though the request had
// left and the provider may have applied it. (The key dedupes the retry here, so only the kit's probe of the
// class, not the count of objects, can show it.)
import { keyedApi } from '../../activities/destinations/keyed-api.js';
import type { DestinationAdapter } from '../../domain/destination-contract.js';

export const PLANTED_TIMEOUT_NOT_SENT = 'keyed-api-timeout-not-sent';

export function keyedApiTimeoutNotSent(baseUrl: string): DestinationAdapter {
  const real = keyedApi(baseUrl);
  return {
    ...real,
    name: PLANTED_TIMEOUT_NOT_SENT,
    async send(request) {
      const outcome = await real.send(request);
      if (outcome.class === 'unknown' && outcome.detail.errorCode === 'TimeoutError')
        return { class: 'not_sent', detail: { reason: 'timed out: the provider did not answer, so nothing happened' } };
      return outcome;
    },
  };
}
