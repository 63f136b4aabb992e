// The destinations this package ships, as a worker connects them: each reads its settings from the worker's
// environment and is hosted only where they are set (the examples default to the simulator's URL). They are
// ordinary users of the public API (domain/destination.ts), as a user's own destinations are.
import type { Destination, DestinationContext } from '../../domain/destination.js';
import { defineDestination } from '../../domain/destination.js';
import { type EmailSettings, emailSmtp, emailSmtpContract } from './email-smtp.js';
import { keyedApiDestination } from './keyed-api.js';
import { type JetStreamSettings, natsJetStream, natsJetStreamContract } from './nats-jetstream.js';
import { ordersSql, ordersSqlContract } from './orders-sql.js';
import { socialFeedDestination } from './social-feed.js';

type Env = DestinationContext['env'];

/** EFFECT_LEDGER_SMTP_URL (smtp://host:port) and EFFECT_LEDGER_MAILPIT_URL, both, or no email adapter. */
export function emailSettingsFrom(env: Env): EmailSettings | undefined {
  if (!env.EFFECT_LEDGER_SMTP_URL || !env.EFFECT_LEDGER_MAILPIT_URL) return undefined;
  const smtp = new URL(env.EFFECT_LEDGER_SMTP_URL);
  return {
    smtpHost: smtp.hostname,
    smtpPort: Number(smtp.port || 25),
    mailboxUrl: env.EFFECT_LEDGER_MAILPIT_URL,
    from: env.EFFECT_LEDGER_EMAIL_FROM ?? 'effect-ledger@localhost',
    mailboxMaxMessages: Number(env.EFFECT_LEDGER_MAILPIT_MAX_MESSAGES ?? 500),
  };
}

/** EFFECT_LEDGER_NATS_URL (host:port), or no JetStream adapter. */
export function jetStreamSettingsFrom(env: Env): JetStreamSettings | undefined {
  if (!env.EFFECT_LEDGER_NATS_URL) return undefined;
  return {
    servers: env.EFFECT_LEDGER_NATS_URL,
    stream: env.EFFECT_LEDGER_NATS_STREAM ?? 'EFFECTS',
    subjectPrefix: env.EFFECT_LEDGER_NATS_SUBJECT_PREFIX ?? 'effects',
  };
}

/** EFFECT_LEDGER_ORDERS_DATABASE_URL (the user's database, never the ledger's), or no orders adapter. */
export function ordersDatabaseUrlFrom(env: Env): string | undefined {
  return env.EFFECT_LEDGER_ORDERS_DATABASE_URL || undefined;
}

export const emailSmtpDestination = defineDestination({
  contract: emailSmtpContract,
  connect: ({ env }) => {
    const settings = emailSettingsFrom(env);
    return settings && emailSmtp(settings);
  },
});

export const natsJetStreamDestination = defineDestination({
  contract: natsJetStreamContract,
  connect: ({ env }) => {
    const settings = jetStreamSettingsFrom(env);
    return settings && natsJetStream(settings);
  },
});

export const ordersSqlDestination = defineDestination({
  contract: ordersSqlContract,
  connect: ({ env }) => {
    const url = ordersDatabaseUrlFrom(env);
    return url ? ordersSql(url) : undefined;
  },
});

/** The simulator's two APIs (examples, declared through the declarative HTTP destination). */
export const exampleDestinations: readonly Destination[] = [keyedApiDestination, socialFeedDestination];

/** Every destination this package ships: what a worker hosts when it is given no destinations. */
export const builtInDestinations: readonly Destination[] = [
  ...exampleDestinations,
  emailSmtpDestination,
  natsJetStreamDestination,
  ordersSqlDestination,
];
