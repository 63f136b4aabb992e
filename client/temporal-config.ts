// temporal.yaml: what is ours in the Temporal footprint (task queue, search attributes, dev-server
// settings) plus the local defaults for address and namespace. How to reach a real cluster follows
// Temporal's own conventions instead (envconfig profiles, TEMPORAL_* variables): see temporal-connection.ts.
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { z } from 'zod';

/** The repository root, or the package's compiled root (dist/, where the build copies temporal.yaml). */
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

/** EFFECT_LEDGER_TEMPORAL_YAML names another file (a deployment's own); default the project's temporal.yaml. */
export function temporalYamlPath(env: NodeJS.ProcessEnv = process.env): string {
  return env.EFFECT_LEDGER_TEMPORAL_YAML ?? resolve(projectRoot, 'temporal.yaml');
}

/**
 * temporal.yaml, with the environment applied the way every Temporal tool applies it: TEMPORAL_ADDRESS
 * and TEMPORAL_NAMESPACE win over the file, and so does our TEMPORAL_TASK_QUEUE. (Connections resolve
 * profiles and TLS on top of this in temporal-connection.ts.)
 */
export function loadTemporalConfig(file = temporalYamlPath(), env: NodeJS.ProcessEnv = process.env): TemporalConfig {
  const parsed = temporalYaml.parse(parse(readFileSync(file, 'utf8')));
  return {
    ...parsed,
    address: env.TEMPORAL_ADDRESS ?? parsed.address,
    namespace: env.TEMPORAL_NAMESPACE ?? parsed.namespace,
    taskQueue: env.TEMPORAL_TASK_QUEUE ?? parsed.taskQueue,
  };
}

/** `--search-attribute` values for `temporal server start-dev`. */
export function searchAttributeArgs(config: TemporalConfig): string[] {
  return Object.entries(config.searchAttributes).flatMap(([name, type]) => ['--search-attribute', `${name}=${type}`]);
}
