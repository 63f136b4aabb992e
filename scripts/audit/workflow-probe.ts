// Temporal's view of an effect for the audit: the workflow's status (the workflow ID is the effect ID) and,
// while it runs, what its status query says it awaits.
import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import { statusQuery } from '../../workflows/contract.js';
import type { WorkflowProbe } from './audit.js';

export function temporalProbe(client: Client, queryTimeoutMs = 10_000): WorkflowProbe {
  return async (effectId) => {
    const handle = client.workflow.getHandle(effectId);
    let status: string;
    try {
      status = (await handle.describe()).status.name;
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return { status: 'NOT_FOUND' };
      throw error;
    }
    if (status !== 'RUNNING') return { status };
    try {
      const query = handle.query(statusQuery);
      query.catch(() => {}); // a query outliving the timeout must not become an unhandled rejection
      const view = await Promise.race([
        query,
        new Promise<never>((_, reject) =>
          setTimeout(() => reject(new Error('query timed out')), queryTimeoutMs).unref(),
        ),
      ]);
      return { status, stage: view.stage, ...(view.awaiting ? { awaiting: view.awaiting } : {}) };
    } catch {
      // No worker answered in time (all killed, say): running, awaiting nothing we can see.
      return { status };
    }
  };
}
