// Runtime configuration of the worker processes: temporal.yaml (read in the client layer, so backend
// code reads the same file) and environment variables for the rest.
export {
  loadTemporalConfig,
  projectRoot,
  searchAttributeArgs,
  type TemporalConfig,
} from '../client/temporal-config.js';

import type { DestinationSettings } from '../activities/destinations/registry.js';

/** Base URL of the provider simulator (both its keyed and key-less APIs live there). */
export function providerUrl(): string {
  return process.env.EFFECT_LEDGER_PROVIDER_URL ?? 'http://127.0.0.1:4010';
}

/**
 * Every destination's connection settings, from the environment (never from a payload). A real
 * destination left unset has no adapter in this worker.
 */
export function destinationSettings(env: NodeJS.ProcessEnv = process.env): DestinationSettings {
  const smtp = env.EFFECT_LEDGER_SMTP_URL ? new URL(env.EFFECT_LEDGER_SMTP_URL) : undefined;
  return {
    providerUrl: env.EFFECT_LEDGER_PROVIDER_URL ?? 'http://127.0.0.1:4010',
    ...(smtp &&
      env.EFFECT_LEDGER_MAILPIT_URL && {
        email: {
          smtpHost: smtp.hostname,
          smtpPort: Number(smtp.port || 25),
          mailboxUrl: env.EFFECT_LEDGER_MAILPIT_URL,
          from: env.EFFECT_LEDGER_EMAIL_FROM ?? 'effect-ledger@localhost',
          mailboxMaxMessages: Number(env.EFFECT_LEDGER_MAILPIT_MAX_MESSAGES ?? 500),
        },
      }),
    ...(env.EFFECT_LEDGER_NATS_URL && {
      jetstream: {
        servers: env.EFFECT_LEDGER_NATS_URL,
        stream: env.EFFECT_LEDGER_NATS_STREAM ?? 'EFFECTS',
        subjectPrefix: env.EFFECT_LEDGER_NATS_SUBJECT_PREFIX ?? 'effects',
      },
    }),
    ...(env.EFFECT_LEDGER_ORDERS_DATABASE_URL && { ordersDatabaseUrl: env.EFFECT_LEDGER_ORDERS_DATABASE_URL }),
  };
}
