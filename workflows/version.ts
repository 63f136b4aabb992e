// The effect workflow's version: the history files of test/histories are named after it. From 7 on, a change to the
// workflow's commands is a new build (Worker Versioning: runs stay pinned to the build that started them), not a
// patch: bump this, run `npm run capture-histories`, and keep the earlier version's files and frozen code
// (docs/versioning.md). Versions 1–6 ran unversioned behind patched(); their code is workflows/v6, frozen.
export const EFFECT_WORKFLOW_VERSION = 8;

/**
 * The oldest pinned version whose histories replay against the current code: v8 changed only what a new input asks
 * for (`attemptLocally`, the attempt as a local activity), so a v7 history, whose input lacks it, takes v7's path.
 */
export const OLDEST_CURRENT_VERSION = 7;

/** The last version that ran before Worker Versioning: its histories replay against workflows/v6. */
export const LAST_UNVERSIONED_VERSION = 6;
