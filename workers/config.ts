// Runtime configuration: temporal.yaml for the Temporal footprint, environment variables for the
// rest. Every process (worker, CLI, demo, tests) reads it through here so they cannot disagree.
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { z } from 'zod';
import type { DestinationSettings } from '../activities/destinations/registry.js';

export const projectRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');

const temporalYaml = z.object({
  address: z.string().min(1),
  namespace: z.string().min(1),
  taskQueue: z.string().min(1),
  devServer: z.object({
    ip: z.string().min(1),
    port: z.number().int().positive(),
    uiPort: z.number().int().positive(),
    dbFilename: z.string().min(1),
    logLevel: z.enum(['debug', 'info', 'warn', 'error']).default('warn'),
  }),
  searchAttributes: z.record(
    z.string(),
    z.enum(['Keyword', 'Text', 'Int', 'Double', 'Bool', 'Datetime', 'KeywordList']),
  ),
  cli: z.object({ version: z.string().regex(/^v\d+\.\d+\.\d+$/) }),
});

export type TemporalConfig = z.infer<typeof temporalYaml>;

export function loadTemporalConfig(file = resolve(projectRoot, 'temporal.yaml')): TemporalConfig {
  const parsed = temporalYaml.parse(parse(readFileSync(file, 'utf8')));
  return {
    ...parsed,
    address: process.env.TEMPORAL_ADDRESS ?? parsed.address,
    namespace: process.env.TEMPORAL_NAMESPACE ?? parsed.namespace,
    taskQueue: process.env.TEMPORAL_TASK_QUEUE ?? parsed.taskQueue,
  };
}

/** `--search-attribute` values for `temporal server start-dev`. */
export function searchAttributeArgs(config: TemporalConfig): string[] {
  return Object.entries(config.searchAttributes).flatMap(([name, type]) => ['--search-attribute', `${name}=${type}`]);
}

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
