// A namespace without the search attributes the effect workflow sets (a user's fresh dev server, say) fails every
// workflow task of every effect. The worker refuses to start there instead, naming each one and the command that
// creates it; after docs/deploy.md's commands, it starts and carries effects.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { dirname } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { Client } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time.js';
import { EffectLedgerClient } from '../client/effect-ledger-client.js';
import { type Stack, startStack } from '../harness/local-stack.js';
import { refundRequest } from '../harness/sample-requests.js';
import { startWorkerProcess } from '../harness/worker-process.js';
import { locateTemporalCli } from '../stack/temporal-cli.js';
import { waitFor, within } from '../stack/wait-for.js';
import { blockAfter, readDoc } from './support/doc-blocks.js';

describe('the Effect* search attributes', { timeout: 180_000 }, () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack({ purpose: 'search_attributes' });
  });
  after(() => stack?.stop());

  test("a worker refuses a namespace that lacks them, naming each; after docs/deploy.md's commands it starts and records an effect", async () => {
    const namespace = 'fresh-team';
    await stack.env.connection.workflowService.registerNamespace({
      namespace,
      workflowExecutionRetentionPeriod: msToTs('1 day'),
    });
    const inFresh = { ...stack, namespace };
    const refused = await startWorkerProcess(inFresh).then(
      async (worker) => {
        await worker.kill();
        return assert.fail('the worker started in a namespace without the search attributes');
      },
      (error: Error) => error.message,
    );
    assert.match(
      refused,
      /namespace fresh-team lacks, as Keyword, the search attributes the effect workflow sets: EffectStage, EffectDestination, EffectOperation, EffectSummary, EffectStep/,
    );
    assert.match(
      refused,
      /temporal operator search-attribute create --namespace fresh-team --name EffectStep --type Keyword/,
    );

    // The commands docs/deploy.md gives a team with only the package, as it runs them: TEMPORAL_* set as for the worker.
    const cli = locateTemporalCli();
    assert.equal(cli.type, 'existing-path', 'the Temporal CLI');
    const commands = blockAfter(readDoc('docs/deploy.md'), 'test/search-attributes.test.ts runs the block below');
    await promisify(execFile)('bash', ['-euo', 'pipefail', '-c', commands], {
      env: {
        ...process.env,
        PATH: `${dirname(cli.path)}:${process.env.PATH}`,
        TEMPORAL_ADDRESS: stack.env.address,
        TEMPORAL_NAMESPACE: namespace,
      },
      timeout: 60_000,
    });

    const worker = await startWorkerProcess(inFresh);
    try {
      const effects = new EffectLedgerClient({
        client: new Client({ connection: stack.env.connection, namespace }),
        db: stack.ledger.db,
        taskQueue: stack.taskQueue,
        absenceGraceMs: 0,
      });
      const request = refundRequest('refund:fresh-namespace', 300);
      await effects.approve(request);
      const result = await within(effects.result(request.effectId), 'the effect to end', 60_000);
      assert.equal(result.stage, 'recorded');
      // Its run carries its stage in the search attributes (visibility follows within moments).
      await waitFor(async () => {
        const { executions } = await stack.env.connection.workflowService.listWorkflowExecutions({
          namespace,
          query: `EffectStage = "recorded" AND WorkflowId = "${request.effectId}"`,
        });
        return executions?.length === 1;
      }, 'the effect listed by EffectStage');
    } finally {
      await worker.kill();
    }
  });
});
