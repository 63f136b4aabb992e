// An effect whose first workflow task times out still finishes, on the build that was current when it started.
// Until a workflow completes its first task it has no version of its own (its describe shows only a transition to
// the current version), so the task that follows a timeout goes to the task queue's unversioned backlog; the
// current version's workers take it from there. Here the worker that took the first task is frozen (SIGSTOP: its
// polls stay open at the server, so the task is handed to it and never answered), the task times out, and a
// worker of the same build takes over. (At 50,000 on an overloaded dev server, 5,040 such tasks waited there
// behind the versioned backlog: docs/price-at-scale.md.)
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import proto from '@temporalio/proto';
import { assertProviderSaw, resultOf } from '../harness/effect-probes.js';
import { type Stack, startStack } from '../harness/local-stack.js';
import { taskRequest } from '../harness/sample-requests.js';
import { startWorkerProcess, type WorkerProcess } from '../harness/worker-process.js';
import { stackDeploymentName } from '../harness/workflow-bundle.js';
import { waitFor } from '../stack/wait-for.js';
import { currentVersion } from '../workers/deployment.js';

const { VersioningBehavior } = proto.temporal.api.enums.v1;

describe('a first workflow task that times out', { timeout: 240_000 }, () => {
  let stack: Stack;
  let frozen: WorkerProcess | undefined;
  before(async () => {
    stack = await startStack({ purpose: 'first_task' });
  });
  after(async () => {
    frozen?.child.kill('SIGKILL');
    await stack?.stop();
  });

  test('is taken by the next worker of the build: the effect is recorded, once', async () => {
    const effectId = 'task:first-task-timeout';
    frozen = await startWorkerProcess(stack);
    const { workflowService } = stack.env.client;
    const current = await waitFor(
      () => currentVersion(workflowService, stack.namespace, stackDeploymentName(stack.taskQueue)),
      'the worker build current',
    );
    frozen.child.kill('SIGSTOP');
    await stack.effects.approve(taskRequest(effectId, 'request-first-task'));
    const handle = stack.env.client.workflow.getHandle(effectId);
    await waitFor(async () => {
      const { events } = await handle.fetchHistory();
      return (events ?? []).some((e) => e.workflowTaskTimedOutEventAttributes);
    }, 'the first workflow task timed out');
    // The frozen worker crashes; another of the same build (the stack's own) polls from now on.
    frozen.child.kill('SIGKILL');
    const result = await stack.withWorker(() => resultOf(stack, effectId));
    assert.equal(result.stage, 'recorded');
    await assertProviderSaw(stack, effectId, { posts: 1 });
    // It ran, and ended, pinned to the build that was current when it started.
    const { versioningInfo } = (await handle.describe()).raw.workflowExecutionInfo ?? {};
    assert.equal(versioningInfo?.deploymentVersion?.buildId, current.buildId);
    assert.equal(versioningInfo?.behavior, VersioningBehavior.VERSIONING_BEHAVIOR_PINNED);
  });
});
