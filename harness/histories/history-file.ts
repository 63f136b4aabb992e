// Workflow histories as files: the JSON that replay (and `temporal workflow show -o json`) reads, named
// v<workflow version>.<path or source>.json in test/histories.
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { type Client, isGrpcServiceError, WorkflowNotFoundError } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { projectRoot } from '../../workers/config.js';

export const HISTORIES_DIR = resolve(projectRoot, 'test/histories');

const FILE_NAME = /^v(\d+)\.([a-z0-9][a-z0-9._-]*)\.json$/;

export function historyFileName(version: number, name: string): string {
  const file = `v${version}.${name.toLowerCase().replace(/[^a-z0-9._-]+/g, '-')}.json`;
  if (!FILE_NAME.test(file)) throw new Error(`cannot name a history file after ${JSON.stringify(name)}`);
  return file;
}

/** The workflow version and name a history file's name carries, or undefined for a name off the pattern. */
export function parseHistoryFileName(file: string): { version: number; name: string } | undefined {
  const match = FILE_NAME.exec(file);
  return match ? { version: Number(match[1]), name: match[2]! } : undefined;
}

export interface HistoryJson {
  events: Array<Record<string, unknown> & { eventType: string }>;
}

export function readHistoryFile(path: string): HistoryJson {
  const history = JSON.parse(readFileSync(path, 'utf8')) as HistoryJson;
  if (!Array.isArray(history.events) || history.events.length === 0) throw new Error(`${path} holds no history events`);
  return history;
}

/** The effect ID from the history's first event: the workflow's input (the workflow ID is the effect ID). */
export function effectIdOf(history: HistoryJson): string {
  const started = history.events[0]!.workflowExecutionStartedEventAttributes as
    | { input?: { payloads?: Array<{ data?: string }> } }
    | undefined;
  const data = started?.input?.payloads?.[0]?.data;
  if (!data) throw new Error('the first event is not a workflow start with an input');
  const input = JSON.parse(Buffer.from(data, 'base64').toString('utf8')) as { effectId?: unknown };
  if (typeof input.effectId !== 'string') throw new Error('the workflow input carries no effectId');
  return input.effectId;
}

/** Event types in order (their count is a history's size; a re-capture may batch them differently). */
export function eventTypes(history: HistoryJson): string[] {
  return history.events.map((e) => e.eventType.replace(/^EVENT_TYPE_/, ''));
}

const GRPC_NOT_FOUND = 5;

type Attributes = Record<
  string,
  | {
      activityType?: { name?: string };
      signalName?: string;
      markerName?: string;
      acceptedRequest?: { input?: { name?: string } };
    }
  | undefined
>;

/**
 * The path the workflow took: the steps it decided on (activities by type, timers, markers for patches,
 * how it closed), then the signals and updates it was given, by name. Where signals fall between steps
 * and how workflow tasks batch depend on timing, so neither is part of it: a re-capture of unchanged
 * code with the same inputs must take the same path.
 */
export function pathOf(history: HistoryJson): string[] {
  const steps: string[] = [];
  const inputs: string[] = [];
  for (const event of history.events) {
    const a = event as unknown as Attributes;
    const type = event.eventType.replace(/^EVENT_TYPE_/, '');
    if (type === 'ACTIVITY_TASK_SCHEDULED')
      steps.push(`activity ${a.activityTaskScheduledEventAttributes?.activityType?.name}`);
    else if (type === 'TIMER_STARTED') steps.push('timer');
    else if (type === 'MARKER_RECORDED') steps.push(`marker ${a.markerRecordedEventAttributes?.markerName}`);
    else if (type === 'WORKFLOW_EXECUTION_SIGNALED')
      inputs.push(`signal ${a.workflowExecutionSignaledEventAttributes?.signalName}`);
    else if (type === 'WORKFLOW_EXECUTION_UPDATE_ACCEPTED')
      inputs.push(`update ${a.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name}`);
    else if (type.startsWith('WORKFLOW_EXECUTION_') && type !== 'WORKFLOW_EXECUTION_UPDATE_COMPLETED')
      steps.push(type.slice('WORKFLOW_EXECUTION_'.length).toLowerCase());
  }
  return [...steps, ...inputs];
}

/** The run this history's run continued from (continue-as-new), if any. */
export function previousRunIdOf(history: HistoryJson): string | undefined {
  const started = history.events[0]!.workflowExecutionStartedEventAttributes as
    | { continuedExecutionRunId?: string }
    | undefined;
  return started?.continuedExecutionRunId || undefined;
}

/** Writes a run's history (the latest by default); an effect the server does not know throws WorkflowNotFoundError. */
export async function captureHistory(client: Client, effectId: string, out: string, runId?: string): Promise<void> {
  const history = await client.workflow
    .getHandle(effectId, runId)
    .fetchHistory()
    .catch((error: unknown) => {
      if (isGrpcServiceError(error) && error.code === GRPC_NOT_FOUND)
        throw new WorkflowNotFoundError(`no history for ${effectId}`, effectId, undefined);
      throw error;
    });
  writeFileSync(out, `${historyToJSON(history)}\n`);
}
