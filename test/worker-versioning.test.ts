// Worker Versioning, as a team ships a workflow change (docs/deploy.md, "Shipping a workflow change"): a new build
// is rolled out with `temporal worker deployment set-current-version`; new effects start on it; an effect that
// waits for a person finishes on the build that started it — no patch anywhere. And the switch from the unversioned
// workers of workflow v6 (behind ten patches) to versioned ones: those effects finish on the frozen v6 code's build.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { Worker } from '@temporalio/worker';
import { createDestinations } from '../activities/destinations/registry.js';
import { createActivities } from '../activities/index.js';
import { readbackTaskQueue } from '../domain/destination-contract.js';
import { resultOf, socialPostsFor, waitForStage } from '../harness/effect-probes.js';
import type { HistoryJson } from '../harness/histories/history-file.js';
import { pathOf } from '../harness/histories/history-file.js';
import { type Stack, startStack } from '../harness/local-stack.js';
import { postRequest, refundRequest } from '../harness/sample-requests.js';
import { loadWorkflowBundle, stackDeploymentName } from '../harness/workflow-bundle.js';
import { waitFor } from '../stack/wait-for.js';
import { buildIdOf, currentVersion, versionRoutable } from '../workers/deployment.js';
import { bundleEffectWorkflows } from '../workers/effect-worker.js';
import { decideUpdate } from '../workflows/contract.js';
import { temporalCli } from './support/cli.js';

const OPS = 'ops@example.com';

let stack: Stack;
/** A stack of its own per scenario: a deployment's current version is the whole task queue's. */
function ownStack() {
  before(async () => {
    stack = await startStack({ purpose: 'versioning', readbackIntervalMs: 1000, readbackMaxIntervalMs: 1000 });
  });
  after(() => stack?.stop());
}

/** The task queues (name and kind) a version's workers poll, as the server knows them. */
async function taskQueuesOf(buildId: string): Promise<Set<string>> {
  try {
    const { workerDeploymentVersionInfo } = await stack.env.connection.workflowService.describeWorkerDeploymentVersion({
      namespace: stack.namespace,
      deploymentVersion: { deploymentName: stackDeploymentName(stack.taskQueue), buildId },
    });
    return new Set((workerDeploymentVersionInfo?.taskQueueInfos ?? []).map((q) => `${q.name}:${q.type}`));
  } catch {
    return new Set(); // not known to the server until its pollers reach it
  }
}

/**
 * `temporal worker deployment set-current-version`, as a team's rollout runs it: once the build's workers poll every
 * task queue the effects use and every one the current version polls (the server refuses a version that would leave
 * one of the current version's behind, and a worker registers its queues one by one).
 */
async function setCurrentVersion(buildId: string): Promise<void> {
  const deploymentName = stackDeploymentName(stack.taskQueue);
  await waitFor(async () => {
    const proposed = await taskQueuesOf(buildId);
    const current = await currentVersion(stack.env.connection.workflowService, stack.namespace, deploymentName);
    const needed = current ? await taskQueuesOf(current.buildId) : new Set<string>();
    return proposed.size >= 3 && [...needed].every((q) => proposed.has(q));
  }, `build ${buildId} to poll the effects' task queue, both readback queues and every queue of the current version`);
  await temporalCli(stack, [
    'worker',
    'deployment',
    'set-current-version',
    '--deployment-name',
    deploymentName,
    '--build-id',
    buildId,
    '--yes',
  ]);
}

/** The build an effect's workflow runs on, as Temporal says (describe: versioning info). */
async function buildOf(effectId: string): Promise<{ buildId?: string; behavior?: unknown }> {
  const { raw } = await stack.env.client.workflow.getHandle(effectId).describe();
  const info = raw.workflowExecutionInfo?.versioningInfo;
  return { buildId: info?.deploymentVersion?.buildId ?? undefined, behavior: info?.behavior };
}

async function historyOf(effectId: string): Promise<HistoryJson> {
  return JSON.parse(historyToJSON(await stack.env.client.workflow.getHandle(effectId).fetchHistory())) as HistoryJson;
}

/** Patch markers (`core_patch`); a local activity's marker (v8's attempt) is not one. */
const markers = (history: HistoryJson) =>
  pathOf(history).filter((step) => step.startsWith('marker') && step !== 'marker core_local_activity');

describe('shipping a workflow change as a new build', () => {
  ownStack();
  test('an effect waiting in UNKNOWN on build 1 is decided and recorded on build 1 while new effects run on build 2, with no patch', async () => {
    const build1 = await loadWorkflowBundle();
    // Build 2's workflow code differs incompatibly: a timer before the first step (a build-1 history no longer replays).
    const build2 = await bundleEffectWorkflows({
      workflowsPath: fileURLToPath(new URL('./altered-workflows/extra-first-step.ts', import.meta.url)),
    });
    const one = await stack.startWorker({ workflowBundle: build1 });
    const two = await stack.startWorker({ workflowBundle: build2, becomeCurrent: false });
    try {
      const waiting = 'versioning:waiting-post';
      await stack.simulator.fault('fail_before_commit', { path: '/social/v1/posts' });
      await stack.effects.approve(postRequest(waiting, 'Versioning: waits on build 1'));
      await waitForStage(stack, waiting, 'unknown', 'a human decision');
      assert.equal((await buildOf(waiting)).buildId, buildIdOf(build1.code));

      await setCurrentVersion(buildIdOf(build2.code));
      // What docs/deploy.md has an operator ask to see what an old build still carries.
      const onBuild1 = `TemporalWorkerDeploymentVersion = "${stackDeploymentName(stack.taskQueue)}:${buildIdOf(build1.code)}" AND ExecutionStatus = "Running"`;
      assert.equal(
        (await stack.env.client.workflow.count(onBuild1)).count,
        1,
        'build 1 still carries the waiting effect',
      );
      const fresh = 'versioning:new-refund';
      await stack.effects.approve(refundRequest(fresh, 2100, 'ch_v2'));
      assert.equal((await resultOf(stack, fresh)).stage, 'recorded');
      assert.equal((await buildOf(fresh)).buildId, buildIdOf(build2.code), 'a new effect starts on the current build');
      const freshPath = pathOf(await historyOf(fresh));
      assert.equal(freshPath[1], 'timer', "build 2's own code ran it (its first step is the timer)");

      // The waiting effect stays pinned to build 1: decided there, recorded there, its history build 1's alone.
      const { accepted } = await stack.env.client.workflow
        .getHandle(waiting)
        .executeUpdate(decideUpdate, { args: [{ decision: 'approve-retry', actor: OPS, reason: 'provider is back' }] });
      assert.equal(accepted, true);
      assert.equal((await resultOf(stack, waiting)).stage, 'recorded');
      assert.equal((await buildOf(waiting)).buildId, buildIdOf(build1.code));
      const waitingHistory = await historyOf(waiting);
      assert.notEqual(pathOf(waitingHistory)[1], 'timer');
      assert.equal((await socialPostsFor(stack, waiting)).length, 1, 'one post at the destination');
      assert.deepEqual([...markers(waitingHistory), ...markers(await historyOf(fresh))], [], 'no patch marker');
      assert.ok(!JSON.stringify(waitingHistory).includes('TemporalChangeVersion'), 'no TemporalChangeVersion upsert');
    } finally {
      await stack.simulator.clearFaults();
      await Promise.all([one.stop(), two.stop()]);
    }
  });
});

describe('from unversioned workers (workflow v6, ten patches) to versioned ones', () => {
  ownStack();
  /** The worker of the release before Worker Versioning: unversioned, the v6 code, its readback queues beside it. */
  async function startUnversionedV6Worker(): Promise<{ stop(): Promise<void> }> {
    const activities = createActivities({
      db: stack.ledger.db,
      destinations: createDestinations({ providerUrl: stack.simulator.url }),
    });
    const workers = await Promise.all([
      Worker.create({
        connection: stack.env.nativeConnection,
        namespace: stack.namespace,
        taskQueue: stack.taskQueue,
        workflowBundle: await loadWorkflowBundle('v6'),
        activities,
      }),
      ...['keyed-api', 'social-feed'].map((destination) =>
        Worker.create({
          connection: stack.env.nativeConnection,
          namespace: stack.namespace,
          taskQueue: readbackTaskQueue(stack.taskQueue, destination),
          activities: { readBack: activities.readBack },
        }),
      ),
    ]);
    const running = workers.map((w) => w.run());
    return {
      async stop() {
        for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
        await Promise.all(running);
      },
    };
  }

  test('an effect started under patches finishes on the v6 build it migrated to, while new effects run on the current build', async () => {
    const old = await startUnversionedV6Worker();
    const v6 = await loadWorkflowBundle('v6');
    const current = await loadWorkflowBundle();
    let v6Build: { stop(): Promise<void> } | undefined;
    let currentBuild: { stop(): Promise<void> } | undefined;
    try {
      const waiting = 'versioning:started-unversioned';
      await stack.simulator.fault('fail_before_commit', { path: '/social/v1/posts' });
      await stack.effects.approve(postRequest(waiting, 'Versioning: started before versioning'));
      await waitForStage(stack, waiting, 'unknown', 'a human decision');
      assert.equal((await buildOf(waiting)).buildId, undefined, 'started unversioned');
      // What docs/deploy.md has an operator ask before stopping the unversioned workers.
      const unmoved = `TemporalWorkerDeployment IS NULL AND ExecutionStatus = "Running" AND WorkflowId = "${waiting}"`;
      await waitFor(
        async () => (await stack.env.client.workflow.count(unmoved)).count === 1,
        'visibility to list it unmoved',
      );

      // 1. The v6 code as a versioned build, made current: the open effect moves to it at its next readback.
      v6Build = await stack.startWorker({ workflowBundle: v6, becomeCurrent: false });
      await setCurrentVersion(buildIdOf(v6.code));
      await waitFor(
        async () => (await buildOf(waiting)).buildId === buildIdOf(v6.code),
        'the waiting effect to move to the v6 build at its next workflow task',
      );
      await waitFor(
        async () => (await stack.env.client.workflow.count(unmoved)).count === 0,
        'visibility to list it moved',
      );
      await old.stop();

      // 2. The current code as the next build, made current: new effects start there.
      currentBuild = await stack.startWorker({ workflowBundle: current, becomeCurrent: false });
      await setCurrentVersion(buildIdOf(current.code));
      const fresh = 'versioning:after-migration';
      await stack.effects.approve(refundRequest(fresh, 2200, 'ch_v3'));
      assert.equal((await resultOf(stack, fresh)).stage, 'recorded');
      assert.equal((await buildOf(fresh)).buildId, buildIdOf(current.code));
      assert.deepEqual(markers(await historyOf(fresh)), [], 'the current build records no patch marker');

      // 3. The old effect is decided, and finishes, on the v6 build: its history carries v6's patch markers.
      const { accepted } = await stack.env.client.workflow
        .getHandle(waiting)
        .executeUpdate(decideUpdate, { args: [{ decision: 'approve-retry', actor: OPS, reason: 'provider is back' }] });
      assert.equal(accepted, true);
      assert.equal((await resultOf(stack, waiting)).stage, 'recorded');
      assert.equal((await buildOf(waiting)).buildId, buildIdOf(v6.code));
      assert.ok(markers(await historyOf(waiting)).length > 0, 'v6 code ran it, with its patches');
      assert.equal((await socialPostsFor(stack, waiting)).length, 1, 'one post at the destination');
    } finally {
      await stack.simulator.clearFaults();
      await old.stop();
      await Promise.all([v6Build?.stop(), currentBuild?.stop()]);
    }
  });
});

describe('a version is routable once the server has met every queue its workers poll', () => {
  ownStack();
  test('versionRoutable resolves once the version is current with each queue and kind registered, and names what is missing', async () => {
    const build = await loadWorkflowBundle();
    const version = { deploymentName: stackDeploymentName(stack.taskQueue), buildId: buildIdOf(build.code) };
    const { workflowService } = stack.env.connection;
    const polled = [
      { name: stack.taskQueue, workflow: true, activity: true },
      { name: readbackTaskQueue(stack.taskQueue, 'social-feed'), workflow: false, activity: true },
    ];
    // No worker yet: the server knows nothing of the version.
    await assert.rejects(
      versionRoutable(workflowService, stack.namespace, version, polled, { timeoutMs: 1000 }),
      /not routable after 1 s: .*(the version|current)/,
    );
    const worker = await stack.startWorker({ workflowBundle: build });
    try {
      await versionRoutable(workflowService, stack.namespace, version, polled);
      assert.equal(
        (await currentVersion(workflowService, stack.namespace, version.deploymentName))?.buildId,
        version.buildId,
      );
      const queues = await taskQueuesOf(version.buildId);
      for (const q of [`${stack.taskQueue}:1`, `${stack.taskQueue}:2`, `${polled[1]?.name}:2`])
        assert.ok(queues.has(q), q);
      // A queue no worker of the version polls is never routable, and is named.
      await assert.rejects(
        versionRoutable(
          workflowService,
          stack.namespace,
          version,
          [...polled, { name: `${stack.taskQueue}-nobody`, workflow: false, activity: true }],
          { timeoutMs: 2000 },
        ),
        (error: Error) =>
          error.message.endsWith(`not yet registered or set: ${stack.taskQueue}-nobody (activity tasks)`),
      );
      // What it waited for is what a run needs: an effect started now is recorded.
      const effectId = 'versioning:routable-refund';
      await stack.effects.approve(refundRequest(effectId, 2300, 'ch_routable'));
      assert.equal((await resultOf(stack, effectId)).stage, 'recorded');
    } finally {
      await worker.stop();
    }
  });
});
