// Everything a worker registers as activities.
import { createAttemptActivities } from './attempt-activities.js';
import { type ActivityDeps, createEffectActivities } from './effect-activities.js';
import { createLookActivities } from './look-activities.js';
import { createReconciliationActivities } from './reconciliation-activities.js';

export type { ActivityDeps } from './effect-activities.js';

export function createActivities(deps: ActivityDeps) {
  return {
    ...createAttemptActivities(deps),
    ...createEffectActivities(deps),
    ...createReconciliationActivities(deps),
    ...createLookActivities(deps),
  };
}

export type EffectActivities = ReturnType<typeof createActivities>;
