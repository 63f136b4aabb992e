// The built-in destinations' adapters built from explicit settings: what the harness, the demo and the bench
// host in-process. A worker process connects `builtInDestinations` (built-in.ts) from its environment instead,
// and a user adds destinations of their own through the public API (domain/destination.ts).
import type { DestinationAdapter } from '../../domain/destination-contract.js';
import { type EmailSettings, emailSmtp, emailSmtpContract } from './email-smtp.js';
import { keyedApi, keyedApiContract } from './keyed-api.js';
import { type JetStreamSettings, natsJetStream, natsJetStreamContract } from './nats-jetstream.js';
import { ordersSql, ordersSqlContract } from './orders-sql.js';
import { socialFeed, socialFeedContract } from './social-feed.js';

export { destinationContracts } from './built-in-contracts.js';

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

/** The adapters a worker hosts, by destination name. */
export type Destinations = Readonly<Record<string, DestinationAdapter>>;

/** A destination left unconfigured has no adapter here: its effects wait, visibly, for a worker that hosts it. */
export function createDestinations(settings: DestinationSettings): Destinations {
  return {
    [keyedApiContract.name]: keyedApi(settings.providerUrl, settings.credentials?.[keyedApiContract.name]),
    [socialFeedContract.name]: socialFeed(settings.providerUrl, settings.credentials?.[socialFeedContract.name]),
    ...(settings.email && { [emailSmtpContract.name]: emailSmtp(settings.email) }),
    ...(settings.jetstream && { [natsJetStreamContract.name]: natsJetStream(settings.jetstream) }),
    ...(settings.ordersDatabaseUrl && { [ordersSqlContract.name]: ordersSql(settings.ordersDatabaseUrl) }),
  };
}
