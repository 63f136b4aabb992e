// Everything a worker registers as activities.
export { createEffectActivities, type ActivityDeps, type EffectActivities } from './effect-activities.js';
