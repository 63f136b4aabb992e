// The destinations this deployment knows. To add one: write an adapter module beside this file
// (contract + send + readback), then list its contract here and its adapter in createDestinations.
import type { DestinationAdapter, DestinationContract } from '../../domain/destination-contract.js';
import { type EmailSettings, emailSmtp, emailSmtpContract } from './email-smtp.js';
import { keyedApi, keyedApiContract } from './keyed-api.js';
import { type JetStreamSettings, natsJetStream, natsJetStreamContract } from './nats-jetstream.js';
import { ordersSql, ordersSqlContract } from './orders-sql.js';
import { socialFeed, socialFeedContract } from './social-feed.js';

export const destinationContracts: Readonly<Record<string, DestinationContract>> = {
  [keyedApiContract.name]: keyedApiContract,
  [socialFeedContract.name]: socialFeedContract,
  [emailSmtpContract.name]: emailSmtpContract,
  [natsJetStreamContract.name]: natsJetStreamContract,
  [ordersSqlContract.name]: ordersSqlContract,
};

export interface DestinationSettings {
  /** Base URL of the provider simulator (or the real provider). */
  providerUrl: string;
  /** The SMTP server and the Mailpit mailbox behind email-smtp; without them it has no adapter. */
  email?: EmailSettings;
  /** The NATS server and stream behind nats-jetstream. */
  jetstream?: JetStreamSettings;
  /** The user's orders database behind orders-sql (never the ledger's). */
  ordersDatabaseUrl?: string;
  /** The HTTP destinations' credentials by name, from the worker's environment or files (workers/config.ts). */
  credentials?: Readonly<Record<string, string | undefined>>;
}

export type Destinations = Readonly<Record<string, DestinationAdapter>>;

/** An effect for a destination left unconfigured fails loudly in the worker (no adapter), never silently. */
export function createDestinations(settings: DestinationSettings): Destinations {
  return {
    [keyedApiContract.name]: keyedApi(settings.providerUrl, settings.credentials?.[keyedApiContract.name]),
    [socialFeedContract.name]: socialFeed(settings.providerUrl, settings.credentials?.[socialFeedContract.name]),
    ...(settings.email && { [emailSmtpContract.name]: emailSmtp(settings.email) }),
    ...(settings.jetstream && { [natsJetStreamContract.name]: natsJetStream(settings.jetstream) }),
    ...(settings.ordersDatabaseUrl && { [ordersSqlContract.name]: ordersSql(settings.ordersDatabaseUrl) }),
  };
}
