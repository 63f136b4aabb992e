// The destinations this deployment knows. To add one: write an adapter module beside this file
// (contract + send + readback), then list its contract here and its adapter in createDestinations.
import type { DestinationAdapter, DestinationContract } from '../../domain/destination-contract.js';
import { keyedApi, keyedApiContract } from './keyed-api.js';
import { socialFeed, socialFeedContract } from './social-feed.js';

export const destinationContracts: Readonly<Record<string, DestinationContract>> = {
  [keyedApiContract.name]: keyedApiContract,
  [socialFeedContract.name]: socialFeedContract,
};

export interface DestinationSettings {
  /** Base URL of the provider simulator (or the real provider). */
  providerUrl: string;
}

export type Destinations = Readonly<Record<string, DestinationAdapter>>;

export function createDestinations(settings: DestinationSettings): Destinations {
  return {
    [keyedApiContract.name]: keyedApi(settings.providerUrl),
    [socialFeedContract.name]: socialFeed(settings.providerUrl),
  };
}
