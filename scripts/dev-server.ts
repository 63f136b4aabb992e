// Starts a Temporal dev server (server + Web UI in one process) as temporal.yaml describes it, with
// our search attributes registered. The Temporal testing package owns the child process, so it
// stops with us.
import { resolve } from 'node:path';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { loadTemporalConfig, projectRoot, searchAttributeArgs, type TemporalConfig } from '../workers/config.js';
import { locateTemporalCli } from './temporal-cli.js';

export interface DevServerOptions {
  /** Omit for a free port (tests). */
  port?: number;
  /** Serve the Web UI on this port; omit for no UI. */
  uiPort?: number;
  /** Persist history in this SQLite file; omit for in-memory (tests). */
  dbFilename?: string;
  config?: TemporalConfig;
}

export async function startDevServer(options: DevServerOptions = {}): Promise<TestWorkflowEnvironment> {
  const config = options.config ?? loadTemporalConfig();
  if (options.dbFilename) mkdirSync(dirname(options.dbFilename), { recursive: true });
  return TestWorkflowEnvironment.createLocal({
    server: {
      executable: locateTemporalCli(),
      ip: config.devServer.ip,
      port: options.port,
      namespace: config.namespace,
      ui: options.uiPort !== undefined,
      uiPort: options.uiPort,
      dbFilename: options.dbFilename,
      log: { format: 'pretty', level: config.devServer.logLevel },
      extraArgs: searchAttributeArgs(config),
    },
  });
}

/** The dev server the demo leaves running: temporal.yaml's ports and database file. */
export function startConfiguredDevServer(config = loadTemporalConfig()): Promise<TestWorkflowEnvironment> {
  return startDevServer({
    config,
    port: config.devServer.port,
    uiPort: config.devServer.uiPort,
    dbFilename: resolve(projectRoot, config.devServer.dbFilename),
  });
}
