// Test-only webpack loader: the effect workflow as it would be had a retry been allowed to leave without a
// fresh readback (and without waiting out the window in which our last request may still be in flight).
// Bundled by test/support/variant-worker.ts for CHAOS_VARIANT=no-fresh-readback; the source is not edited.
const FIND = 'if (!run.v3) return RETRY;';

module.exports = function skipFreshReadback(source) {
  if (source.split(FIND).length !== 2) throw new Error(`workflows/reconcile.ts must hold ${FIND} exactly once`);
  return source.replace(FIND, 'return RETRY;');
};
