// Where effect-ledger's workflow code is, for a worker to bundle: index.ts beside this module's source under tsx,
// index.js beside the compiled package's module. `v6` is the frozen code of workflow version 6, which drains the
// effects started before Worker Versioning (workflows/v6/index.ts).
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';

export const WORKFLOW_CODES = ['current', 'v6'] as const;
export type WorkflowCode = (typeof WORKFLOW_CODES)[number];

export function isWorkflowCode(value: string): value is WorkflowCode {
  return (WORKFLOW_CODES as readonly string[]).includes(value);
}

const ext = extname(fileURLToPath(import.meta.url));

export function workflowsPathOf(code: WorkflowCode = 'current'): string {
  return fileURLToPath(
    new URL(code === 'v6' ? `../workflows/v6/index${ext}` : `../workflows/index${ext}`, import.meta.url),
  );
}

export const workflowsPath = workflowsPathOf('current');
