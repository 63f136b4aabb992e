// The effect workflow's version. Bump it with every change to the commands the workflow issues (guard
// the change with patched(); README "Evolving the workflow"), then run `npm run capture-histories`:
// test/histories keeps every earlier version's files, and the replay test wants this version's full set.
export const EFFECT_WORKFLOW_VERSION = 6;
