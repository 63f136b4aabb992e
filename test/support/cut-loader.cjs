// Test-only webpack loader: a workflow file with the planted variant's cuts applied at bundle time (the source
// is not edited). Its options carry the cuts (test/support/variant-worker.ts, test/support/cuts.ts).
module.exports = function cutLoader(source) {
  const { cuts = [] } = this.getOptions();
  let out = source;
  for (const cut of cuts.filter((c) => this.resourcePath.endsWith(c.file))) {
    if (out.split(cut.find).length !== 2)
      throw new Error(`${cut.file} must hold ${JSON.stringify(cut.find)} exactly once`);
    out = out.replace(cut.find, cut.replace);
  }
  return out;
};
