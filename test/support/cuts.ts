// Planted bugs, as cuts: a string of a source file replaced at load time, the file itself never edited. A
// workflow file is cut when the variant worker bundles the workflow (cut-loader.cjs, a webpack loader); any
// other file when Node loads it (cut-hooks.mjs, registered through NODE_OPTIONS before tsx). Each cut must
// find its string exactly once: a fix that moved the code makes the planted variant fail loudly, not pass.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export interface Cut {
  /** The file, from the repository's root: `workflows/reconcile.ts`. */
  file: string;
  find: string;
  replace: string;
}

export const CUTS_ENV = 'CHAOS_CUTS';
const root = fileURLToPath(new URL('../../', import.meta.url));
export const CUT_REGISTER = fileURLToPath(new URL('./cut-register.mjs', import.meta.url));

/** Why a cut cannot be planted on today's source (its string not there exactly once), or null. */
export function cutProblem(cut: Cut): string | null {
  const source = readFileSync(`${root}${cut.file}`, 'utf8');
  const times = source.split(cut.find).length - 1;
  return times === 1 ? null : `${cut.file} holds ${JSON.stringify(cut.find)} ${times} times (expected once)`;
}

/** The environment of a worker process that runs with these cuts planted (test/support/variant-worker.ts). */
export function cutEnvironment(cuts: Cut[]): NodeJS.ProcessEnv {
  return {
    CHAOS_VARIANT: 'cuts',
    [CUTS_ENV]: JSON.stringify(cuts),
    NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${CUT_REGISTER}`.trim(),
  };
}

/** Issue 19's planted bugs the tests did not catch (and the returns of its fixes, once merged). */
export const PLANTED_CUTS = {
  /** A decision queued while its UNKNOWN episode ended in a retry is no longer refused as stale. */
  'stale-refusal-removed': [
    {
      file: 'workflows/reconcile.ts',
      find: 'if (resolution === RETRY)\n',
      replace: 'if (resolution === RETRY && resolution !== RETRY)\n',
    },
  ],
  /** stepsToGo() returns every step, settled ones included: a continued run carries a settled step again. */
  'steps-to-go-all': [
    {
      file: 'workflows/effect-run.ts',
      find: 'return this.steps.filter((step) => !done.has(step));',
      replace: 'return done.size >= 0 ? [...this.steps] : [];',
    },
  ],
  /** The reconciler's fix taken out: an effect whose start fails aborts the whole pass again. */
  'reconciler-blind': [
    {
      file: 'client/reconciler-pass.ts',
      find: 'if (temporalUnreachable(error)) throw error;',
      replace: 'throw error;',
    },
  ],
  /** The reconciler's paging taken out: a pass reads its first page and stops. */
  'reconciler-one-page': [
    { file: 'client/reconciler-pass.ts', find: 'if (page.length < pageSize) break;', replace: 'break;' },
  ],
} satisfies Record<string, Cut[]>;
