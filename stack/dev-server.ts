// Starts a Temporal dev server (server + Web UI in one process) as temporal.yaml describes it, with
// our search attributes registered. The Temporal testing package owns the child process and stops it
// on teardown; the reaper stops it when we die without one (SIGKILL).

import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { closeGatePlugin, settleTemporalCalls } from '../client/connection-close.js';
import { loadTemporalConfig, projectRoot, searchAttributeArgs, type TemporalConfig } from '../workers/config.js';
import { childProcessesMatching, reapWithUs } from './reaper.js';
import { locateTemporalCli } from './temporal-cli.js';

export interface DevServerOptions {
  /** Omit for a free port (tests). */
  port?: number;
  /** Serve the Web UI on this port; omit for no UI. */
  uiPort?: number;
  /** Persist history in this SQLite file; omit for in-memory (tests). */
  dbFilename?: string;
  config?: TemporalConfig;
  /** More `temporal server start-dev` arguments, e.g. `--dynamic-config-value` for a server's limits. */
  extraArgs?: string[];
}

const indexedValueType: Record<
  TemporalConfig['searchAttributes'][string],
  proto.temporal.api.enums.v1.IndexedValueType
> = {
  Keyword: proto.temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  Text: proto.temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_TEXT,
  Int: proto.temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_INT,
  Double: proto.temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_DOUBLE,
  Bool: proto.temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_BOOL,
  Datetime: proto.temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_DATETIME,
  KeywordList: proto.temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD_LIST,
};

/**
 * Registers the search attributes temporal.yaml lists and the server lacks. `--search-attribute` only
 * takes effect on a fresh dev-server database; a persisted one (the demo's) needs this.
 */
export async function ensureSearchAttributes(
  connection: Connection,
  config: Pick<TemporalConfig, 'namespace' | 'searchAttributes'>,
): Promise<string[]> {
  const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace: config.namespace });
  const missing = Object.entries(config.searchAttributes).filter(
    ([name]) => !(customAttributes && name in customAttributes),
  );
  if (missing.length) {
    await connection.operatorService.addSearchAttributes({
      namespace: config.namespace,
      searchAttributes: Object.fromEntries(missing.map(([name, type]) => [name, indexedValueType[type]])),
    });
  }
  return missing.map(([name]) => name);
}

/**
 * Task priority (first readbacks before repeat ones) needs the server's new task matcher: on by default from server
 * 1.31, behind this setting on 1.29–1.30 (the CLI v1.5.1's dev server is 1.29.1).
 */
export const DYNAMIC_CONFIG = ['--dynamic-config-value', 'matching.useNewMatcher=true'];

/** Core gives a dev server 5 s to answer; on a loaded machine (files start theirs side by side) it may not. */
const NOT_STARTED = /ephemeral server at [\d.]+:(\d+) did not start within/;

export async function startDevServer(options: DevServerOptions = {}): Promise<TestWorkflowEnvironment> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startDevServerOnce(options);
    } catch (error) {
      const port = NOT_STARTED.exec(String(error))?.[1];
      if (!port || attempt === 3) throw error;
      // Core leaves the slow one running: it goes, and another starts (on a new free port unless one was given).
      for (const pid of childProcessesMatching('start-dev', `--port ${port}`)) process.kill(pid, 'SIGKILL');
    }
  }
}

async function startDevServerOnce(options: DevServerOptions): Promise<TestWorkflowEnvironment> {
  const config = options.config ?? loadTemporalConfig();
  if (options.dbFilename) mkdirSync(dirname(options.dbFilename), { recursive: true });
  const env = await TestWorkflowEnvironment.createLocal({
    server: {
      executable: locateTemporalCli(),
      ip: config.devServer.ip,
      port: options.port,
      namespace: config.namespace,
      ui: options.uiPort !== undefined,
      uiPort: options.uiPort,
      dbFilename: options.dbFilename,
      log: { format: 'pretty', level: config.devServer.logLevel },
      extraArgs: [...searchAttributeArgs(config), ...DYNAMIC_CONFIG, ...(options.extraArgs ?? [])],
    },
    plugins: [closeGatePlugin],
  });
  settleCallsOnTeardown(env);
  const port = env.address.split(':').pop() ?? '';
  for (const pid of childProcessesMatching('start-dev', `--port ${port}`)) reapWithUs(pid);
  await ensureSearchAttributes(env.connection, config);
  return env;
}

/**
 * The SDK's teardown closes the environment's connection as it is: calls still retrying on it (Temporal
 * already down, say) are settled first, so none retries on the closed channel (client/connection-close.ts).
 * The connection must carry the gate: `plugins: [closeGatePlugin]` where the environment is made.
 */
export function settleCallsOnTeardown(env: TestWorkflowEnvironment): void {
  const teardown = env.teardown.bind(env);
  env.teardown = async () => {
    await settleTemporalCalls(env.connection);
    await teardown();
  };
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
