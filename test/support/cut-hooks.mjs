// Node load hooks for a planted variant: the source of each file named by a cut, with the cut applied, before
// tsx compiles it. Test-only (test/support/cuts.ts).
let cuts = [];

export function initialize(data) {
  cuts = data ?? [];
}

export async function load(url, context, nextLoad) {
  const loaded = await nextLoad(url, context);
  const mine = cuts.filter((cut) => url.endsWith(`/${cut.file}`));
  if (!mine.length || loaded.source == null) return loaded;
  let source = String(loaded.source);
  for (const cut of mine) {
    if (source.split(cut.find).length !== 2)
      throw new Error(`${cut.file} must hold ${JSON.stringify(cut.find)} exactly once`);
    source = source.replace(cut.find, cut.replace);
  }
  return { ...loaded, source };
}
