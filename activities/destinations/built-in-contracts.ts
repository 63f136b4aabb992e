// The contracts of the destinations this package ships, and nothing of their adapters: what backend code
// validates approvals against by default (no nodemailer, NATS client or database driver is loaded here).
// `keyed-api` and `social-feed` are examples: they speak to our provider simulator (harness/simulator/).

import { catalogOf, type DestinationCatalog } from '../../domain/destination.js';
import type { DestinationContract } from '../../domain/destination-contract.js';
import { emailSmtpContract } from './email-smtp-contract.js';
import { keyedApiContract } from './keyed-api.js';
import { natsJetStreamContract } from './nats-jetstream-contract.js';
import { ordersSqlContract } from './orders-sql-contract.js';
import { socialFeedContract } from './social-feed.js';

/** The simulator's two APIs: examples of an idempotency-key API and of a key-less one, declared as data. */
export const exampleContracts: readonly DestinationContract[] = [keyedApiContract, socialFeedContract];

/** Email over SMTP, a NATS JetStream stream, an orders table in the user's database: real servers. */
export const realDestinationContracts: readonly DestinationContract[] = [
  emailSmtpContract,
  natsJetStreamContract,
  ordersSqlContract,
];

/** Every destination this package ships: the default a client validates against. */
export const builtInContracts: readonly DestinationContract[] = [...exampleContracts, ...realDestinationContracts];

/** The built-in contracts by name. */
export const destinationContracts: DestinationCatalog = catalogOf(builtInContracts);
