// Runtime configuration of the worker processes: temporal.yaml (read in the client layer, so backend
// code reads the same file) and environment variables for the rest.
import { readFileSync } from 'node:fs';
import {
  emailSettingsFrom,
  jetStreamSettingsFrom,
  ordersDatabaseUrlFrom,
} from '../activities/destinations/built-in.js';
import { type DestinationSettings, destinationContracts } from '../activities/destinations/registry.js';

export {
  loadTemporalConfig,
  projectRoot,
  searchAttributeArgs,
  type TemporalConfig,
} from '../client/temporal-config.js';

/** Base URL of the provider simulator (both its keyed and key-less APIs live there). */
export function providerUrl(): string {
  return process.env.EFFECT_LEDGER_PROVIDER_URL ?? 'http://127.0.0.1:4010';
}

/**
 * Every destination's connection settings, from the environment (never from a payload). A real
 * destination left unset has no adapter in this worker.
 */
export function destinationSettings(env: NodeJS.ProcessEnv = process.env): DestinationSettings {
  const email = emailSettingsFrom(env);
  const jetstream = jetStreamSettingsFrom(env);
  const ordersDatabaseUrl = ordersDatabaseUrlFrom(env);
  return {
    providerUrl: env.EFFECT_LEDGER_PROVIDER_URL ?? 'http://127.0.0.1:4010',
    ...(email && { email }),
    ...(jetstream && { jetstream }),
    ...(ordersDatabaseUrl && { ordersDatabaseUrl }),
    credentials: destinationCredentials(HTTP_DESTINATIONS, env),
  };
}

/** The destinations whose credential travels in a header; the real ones carry theirs in their URLs. */
const HTTP_DESTINATIONS = ['keyed-api', 'social-feed'];

/** EFFECT_LEDGER_CREDENTIAL_<DESTINATION> names the variable (keyed-api → …_KEYED_API; …_FILE for a file). */
export function credentialVariable(destination: string): string {
  return `EFFECT_LEDGER_CREDENTIAL_${destination.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;
}

/**
 * Each destination's credential, from the worker's environment or a file it names (a mounted secret):
 * EFFECT_LEDGER_CREDENTIAL_KEYED_API=… or EFFECT_LEDGER_CREDENTIAL_KEYED_API_FILE=/run/secrets/keyed-api.
 * Never from a payload: what an approver sends cannot choose whose account an effect runs under.
 */
export function destinationCredentials(
  destinations: readonly string[] = Object.keys(destinationContracts),
  env: NodeJS.ProcessEnv = process.env,
): Record<string, string | undefined> {
  return Object.fromEntries(
    destinations.map((name) => {
      const variable = credentialVariable(name);
      const file = env[`${variable}_FILE`];
      return [name, file ? readFileSync(file, 'utf8').trim() : env[variable] || undefined];
    }),
  );
}
