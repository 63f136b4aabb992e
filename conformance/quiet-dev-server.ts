// The kit's Temporal dev server, started so that the kit's own output is the first thing a user reads: the
// server's banner and logs go to a file (named when the kit fails), not to the terminal. The Temporal CLI is
// spawned as the stack spawns its servers (tied to this process, stack/reaper.ts) and reached as an existing
// server, with stack/dev-server.ts's settings (its dynamic config, the connection's close gate); with no CLI
// found, the Temporal SDK's download runs it as stack/dev-server.ts does (that one prints).
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { TestWorkflowEnvironment as Environment } from '@temporalio/testing';
import { closeGatePlugin } from '../client/connection-close.js';
import { DYNAMIC_CONFIG, ensureSearchAttributes, settleCallsOnTeardown, startDevServer } from '../stack/dev-server.js';
import { freePort } from '../stack/free-port.js';
import { spawnSupervised } from '../stack/reaper.js';
import { locateTemporalCli } from '../stack/temporal-cli.js';
import { waitFor } from '../stack/wait-for.js';
import { searchAttributeArgs, type TemporalConfig } from '../workers/config.js';

export interface QuietDevServer {
  env: TestWorkflowEnvironment;
  /** Where its output went (undefined: it printed, started by the SDK's download). */
  logFile?: string;
  stop(): Promise<void>;
}

export async function startQuietDevServer(config: TemporalConfig, logFile: string): Promise<QuietDevServer> {
  const cli = locateTemporalCli();
  if (cli.type !== 'existing-path') {
    const env = await startDevServer({ config });
    return { env, stop: () => env.teardown() };
  }
  const port = await freePort();
  const server = spawnSupervised(
    cli.path,
    [
      'server',
      'start-dev',
      '--ip',
      config.devServer.ip,
      '--port',
      String(port),
      '--headless',
      '--namespace',
      config.namespace,
      '--log-format',
      'pretty',
      '--log-level',
      config.devServer.logLevel,
      ...searchAttributeArgs(config),
      ...DYNAMIC_CONFIG,
    ],
    { logFile },
  );
  try {
    const exited = server.exited.then(() => {
      throw new Error(`the Temporal dev server exited (${server.child.exitCode}); its log: ${logFile}`);
    });
    const env = await Promise.race([
      waitFor(
        () =>
          Environment.createFromExistingServer({
            address: `${config.devServer.ip}:${port}`,
            namespace: config.namespace,
            plugins: [closeGatePlugin],
          }).catch(() => undefined),
        `the Temporal dev server on port ${port} (its log: ${logFile})`,
        60_000,
      ),
      exited,
    ]);
    exited.catch(() => {});
    settleCallsOnTeardown(env);
    await ensureSearchAttributes(env.connection, config);
    return {
      env,
      logFile,
      async stop() {
        await env.teardown().catch(() => {});
        await server.stop();
      },
    };
  } catch (error) {
    await server.stop();
    throw error;
  }
}
