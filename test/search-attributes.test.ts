// A namespace without the search attributes the effect workflow sets (a user's fresh dev server, say) fails every
// workflow task of every effect. The worker refuses to start there instead, naming each one and the command that
// creates it; after docs/deploy.md's commands, it starts.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { dirname } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { msToTs } from '@temporalio/common/lib/time.js';
import { type Stack, startStack } from '../harness/local-stack.js';
import { startWorkerProcess } from '../harness/worker-process.js';
import { locateTemporalCli } from '../stack/temporal-cli.js';
import { loadTemporalConfig } from '../workers/config.js';
import { EFFECT_SEARCH_ATTRIBUTES } from '../workers/search-attribute-check.js';
import { blockAfter, readDoc } from './support/doc-blocks.js';

describe('the Effect* search attributes', { timeout: 180_000 }, () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack({ purpose: 'search_attributes' });
  });
  after(() => stack?.stop());

  test("a worker refuses a namespace that lacks them, naming each; after docs/deploy.md's commands it starts", async () => {
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
    // Each attribute temporal.yaml lists (what the dev server registers), with the command that creates it.
    const names = Object.keys(loadTemporalConfig().searchAttributes);
    assert.deepEqual(names, [...EFFECT_SEARCH_ATTRIBUTES], 'the worker checks the attributes temporal.yaml lists');
    assert.match(
      refused,
      new RegExp(
        `namespace fresh-team lacks, as Keyword, the search attributes the effect workflow sets: ${names.join(', ')}`,
      ),
    );
    for (const name of names)
      assert.match(
        refused,
        new RegExp(`temporal operator search-attribute create --namespace fresh-team --name ${name} --type Keyword`),
      );

    // docs/deploy.md creates each of them, on a fresh cluster and for a team with only the package.
    const deploy = readDoc('docs/deploy.md');
    const loops = [...deploy.matchAll(/^for name in (.+); do$/gm)].map((m) => m[1]?.split(' '));
    assert.deepEqual(loops, [names, names]);

    // The commands docs/deploy.md gives a team with only the package, as it runs them: TEMPORAL_* set as for the worker.
    const cli = locateTemporalCli();
    assert.equal(cli.type, 'existing-path', 'the Temporal CLI');
    const commands = blockAfter(deploy, 'test/search-attributes.test.ts runs the block below');
    await promisify(execFile)('bash', ['-euo', 'pipefail', '-c', commands], {
      env: {
        ...process.env,
        PATH: `${dirname(cli.path)}:${process.env.PATH}`,
        TEMPORAL_ADDRESS: stack.env.address,
        TEMPORAL_NAMESPACE: namespace,
      },
      timeout: 60_000,
    });

    // Now it starts: it reaches RUNNING only past the check.
    const worker = await startWorkerProcess(inFresh);
    await worker.kill();
  });

  test("docs/deploy.md's fresh-cluster commands create the namespace and each attribute", async () => {
    // As a team runs them on its cluster, in a namespace of this test's instead of `effects`.
    const namespace = 'fresh-cluster';
    const shown = blockAfter(
      readDoc('docs/deploy.md'),
      'test/search-attributes.test.ts creates a namespace with the block below',
    );
    const commands = shown.replaceAll('--namespace effects', `--namespace ${namespace}`);
    assert.equal(commands.split(`--namespace ${namespace}`).length, 3, shown);
    const cli = locateTemporalCli();
    assert.equal(cli.type, 'existing-path', 'the Temporal CLI');
    await promisify(execFile)('bash', ['-euo', 'pipefail', '-c', commands], {
      env: { ...process.env, PATH: `${dirname(cli.path)}:${process.env.PATH}`, TEMPORAL_ADDRESS: stack.env.address },
      timeout: 60_000,
    });
    const { customAttributes } = await stack.env.connection.operatorService.listSearchAttributes({ namespace });
    for (const name of EFFECT_SEARCH_ATTRIBUTES) assert.ok(customAttributes?.[name], `${namespace} has ${name}`);
    const described = await stack.env.connection.workflowService.describeNamespace({ namespace });
    assert.equal(Number(described.config?.workflowExecutionRetentionTtl?.seconds), 30 * 24 * 60 * 60);
    await startWorkerProcess({ ...stack, namespace }).then((worker) => worker.kill());
  });
});
