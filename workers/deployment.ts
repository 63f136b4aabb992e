// Worker Versioning: every effect-ledger worker belongs to a worker deployment version (a deployment name and a
// build ID), and effects run PINNED to the version that started them. A change to the workflow is a new build:
// new effects start on whichever version is current, an effect waiting for a person finishes on its own build, and
// an old build's workers stop once its effects have drained (docs/versioning.md, docs/deploy.md).
//
// The name and build ID come from the environment, as every Temporal setting does: TEMPORAL_DEPLOYMENT_NAME and
// TEMPORAL_WORKER_BUILD_ID. A worker started without them, or against a server without Worker Versioning, stops
// with an error that names what is missing: an unversioned worker would take pinned effects' tasks with whatever
// code it runs.
import { createHash } from 'node:crypto';
import type { WorkflowService } from '@temporalio/client';
import type { WorkerDeploymentOptions } from '@temporalio/worker';

export const DEPLOYMENT_NAME_ENV = 'TEMPORAL_DEPLOYMENT_NAME';
export const BUILD_ID_ENV = 'TEMPORAL_WORKER_BUILD_ID';

/** One worker deployment version: where an effect's pinned workflow runs until it ends. */
export interface DeploymentVersion {
  deploymentName: string;
  buildId: string;
}

/** A worker that cannot run versioned: what is missing, by name. */
export class WorkerDeploymentError extends Error {
  override readonly name = 'WorkerDeploymentError';
}

/** The version the environment names, or undefined when it names none; half a version is an error. */
export function deploymentFromEnv(env: NodeJS.ProcessEnv = process.env): DeploymentVersion | undefined {
  const deploymentName = env[DEPLOYMENT_NAME_ENV]?.trim() || undefined;
  const buildId = env[BUILD_ID_ENV]?.trim() || undefined;
  if (!deploymentName && !buildId) return undefined;
  return requireDeployment({ deploymentName, buildId });
}

/** The version, whole: both names set and usable, or an error naming each that is not. */
export function requireDeployment(given: Partial<DeploymentVersion> | undefined): DeploymentVersion {
  const missing = [
    ...(given?.deploymentName ? [] : [`the deployment name (${DEPLOYMENT_NAME_ENV})`]),
    ...(given?.buildId ? [] : [`the build ID (${BUILD_ID_ENV})`]),
  ];
  if (missing.length)
    throw new WorkerDeploymentError(
      `effect-ledger runs every effect pinned to a worker deployment version, and this worker has no ${missing.join(' and no ')}: ` +
        `set ${DEPLOYMENT_NAME_ENV} and ${BUILD_ID_ENV} (or the plugin's \`deployment\` option), then make the version current with ` +
        '`temporal worker deployment set-current-version --deployment-name <name> --build-id <id>` (docs/deploy.md)',
    );
  const version = given as DeploymentVersion;
  // The server joins them as "<name>.<build ID>": a dot in the name would make that ambiguous.
  if (version.deploymentName.includes('.'))
    throw new WorkerDeploymentError(
      `the deployment name ${JSON.stringify(version.deploymentName)} (${DEPLOYMENT_NAME_ENV}) may not contain a dot`,
    );
  return version;
}

/** The SDK's options for a version: versioned, pinned by default (the effect workflow also declares PINNED). */
export function deploymentOptions(version: DeploymentVersion): WorkerDeploymentOptions {
  return { version, useWorkerVersioning: true, defaultVersioningBehavior: 'PINNED' };
}

/**
 * A build ID made from a workflow bundle's code, for stacks that build their own (tests, the demo, the conformance
 * kit): the same code is the same build (a restarted worker rejoins its pinned effects), other code another build.
 */
export function buildIdOf(bundleCode: string): string {
  return `wf-${createHash('sha256').update(bundleCode).digest('hex').slice(0, 12)}`;
}

/** "effect-ledger.7f3a…": how Temporal's CLI and UI name a version. */
export function versionName({ deploymentName, buildId }: DeploymentVersion): string {
  return `${deploymentName}.${buildId}`;
}

/** The gRPC status codes these calls answer with (grpc-js's `status`, which the SDK does not re-export). */
const GrpcStatus = {
  NOT_FOUND: 5,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  UNIMPLEMENTED: 12,
} as const;
const grpcCode = (error: unknown) => (error as { code?: unknown } | null)?.code;

/**
 * Fails, naming the server, when it does not offer worker deployments (Temporal Server ≥ 1.29.1; the CLI's dev
 * server from v1.4.1): a versioned worker would otherwise poll as if unversioned.
 */
export async function requireVersioningServer(service: WorkflowService, namespace: string): Promise<void> {
  try {
    await service.listWorkerDeployments({ namespace, pageSize: 1 });
  } catch (error) {
    const code = grpcCode(error);
    if (code === GrpcStatus.UNIMPLEMENTED || code === GrpcStatus.FAILED_PRECONDITION)
      throw new WorkerDeploymentError(
        `the Temporal server does not offer Worker Versioning in namespace ${namespace} (${(error as Error).message}): ` +
          'effect-ledger needs worker deployments (Temporal Server 1.29.1 or later, the CLI dev server from v1.4.1)',
      );
    throw error;
  }
}

interface DeploymentRouting {
  current?: DeploymentVersion;
  /** The version whose workers the server met most recently. */
  latest?: DeploymentVersion;
}

const versionOf = (v: { buildId?: string | null; deploymentName?: string | null } | null | undefined) =>
  v?.buildId && v.deploymentName ? { deploymentName: v.deploymentName, buildId: v.buildId } : undefined;

/**
 * Where a deployment routes new runs now, from the deployments list (asking for one that does not exist yet would
 * be an error the server logs; listing is not).
 */
async function routingOf(
  service: WorkflowService,
  namespace: string,
  deploymentName: string,
): Promise<DeploymentRouting> {
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await service.listWorkerDeployments({ namespace, pageSize: 100, nextPageToken });
    const found = page.workerDeployments?.find((d) => d.name === deploymentName);
    if (found)
      return {
        current: versionOf(found.routingConfig?.currentDeploymentVersion),
        latest: versionOf(found.latestVersionSummary?.deploymentVersion),
      };
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
  } while (nextPageToken);
  return {};
}

/** The version a deployment routes new runs to now, or undefined (none yet, or the deployment does not exist). */
export async function currentVersion(
  service: WorkflowService,
  namespace: string,
  deploymentName: string,
): Promise<DeploymentVersion | undefined> {
  return (await routingOf(service, namespace, deploymentName)).current;
}

/**
 * Makes `version` the deployment's current version, as `temporal worker deployment set-current-version` does, once
 * its workers poll (the server knows a version only from its pollers). For development stacks, tests and the demo;
 * a production rollout sets it by hand or ramps (docs/deploy.md). Resolves at once when it already is current.
 */
/**
 * What asking again cannot fix. Anything else is: not yet known to the server (its pollers have not reached it),
 * another worker of the same build setting it at the same moment, the deployment's own workflow busy (the server
 * caps its in-flight updates; a call can time out behind them) or unreachable for a moment.
 */
const ROUTING_REFUSED = new Set<number>([3, 7, GrpcStatus.UNIMPLEMENTED, 16]); // invalid argument, permission, -, auth

export async function becomeCurrentVersion(
  service: WorkflowService,
  namespace: string,
  version: DeploymentVersion,
  { identity = 'effect-ledger', signal }: { identity?: string; signal?: AbortSignal } = {},
): Promise<void> {
  for (let wait = 50, tries = 0; ; wait = Math.min(wait * 2, 1000), tries++) {
    try {
      const { current, latest } = await routingOf(service, namespace, version.deploymentName);
      if (current?.buildId === version.buildId) return;
      // Until the server has met this build's pollers, asking would only be refused (and logged by the server).
      const known = latest?.buildId === version.buildId || tries >= 10;
      if (known) {
        await service.setWorkerDeploymentCurrentVersion({
          namespace,
          deploymentName: version.deploymentName,
          buildId: version.buildId,
          identity,
          // A version's task queues are those its workers poll; the readback queues of a destination this build no
          // longer hosts are not a reason to keep the old version current.
          ignoreMissingTaskQueues: true,
        });
        return;
      }
    } catch (error) {
      const code = grpcCode(error);
      if (typeof code !== 'number' || ROUTING_REFUSED.has(code)) throw error;
    }
    if (signal?.aborted) throw signal.reason;
    await new Promise((resolve) => setTimeout(resolve, wait));
  }
}

/** A task queue a version's workers poll, and for which kinds of task. */
export interface PolledQueue {
  name: string;
  workflow: boolean;
  activity: boolean;
}

const TASK_QUEUE_TYPE = { workflow: 1, activity: 2 } as const;

/**
 * Resolves once the server routes to `version` (it is current) and has registered every queue its workers poll,
 * for each kind of task: until the server has met a queue's activity pollers, the activities a run on that
 * version schedules there are not dispatched. On a loaded server a registration can take a minute (it runs
 * through the deployment's own system workflow), and runs started meanwhile wait with nothing to say why; a
 * caller that starts runs right after its worker (the conformance kit) waits here first. Rejects after
 * `timeoutMs`, naming what is still missing.
 */
export async function versionRoutable(
  service: WorkflowService,
  namespace: string,
  version: DeploymentVersion,
  queues: readonly PolledQueue[],
  { timeoutMs = 180_000, signal }: { timeoutMs?: number; signal?: AbortSignal } = {},
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let missing: string[] = ['the version'];
  for (let wait = 100; ; wait = Math.min(wait * 2, 1000)) {
    try {
      const [routing, described] = await Promise.all([
        routingOf(service, namespace, version.deploymentName),
        service.describeWorkerDeploymentVersion({ namespace, deploymentVersion: version }),
      ]);
      const registered = new Set(
        (described.workerDeploymentVersionInfo?.taskQueueInfos ?? []).map((q) => `${q.name}/${q.type}`),
      );
      missing = queues.flatMap((q) =>
        (['workflow', 'activity'] as const)
          .filter((kind) => q[kind] && !registered.has(`${q.name}/${TASK_QUEUE_TYPE[kind]}`))
          .map((kind) => `${q.name} (${kind} tasks)`),
      );
      if (routing.current?.buildId !== version.buildId) missing.push('current');
      if (!missing.length) return;
    } catch (error) {
      const code = grpcCode(error);
      if (typeof code !== 'number' || ROUTING_REFUSED.has(code)) throw error;
    }
    if (signal?.aborted) throw signal.reason;
    if (Date.now() >= deadline)
      throw new WorkerDeploymentError(
        `${versionName(version)} is not routable after ${Math.round(timeoutMs / 1000)} s: not yet registered or set: ${missing.join(', ')}`,
      );
    await new Promise((resolve) => setTimeout(resolve, wait));
  }
}
