// Every top-level folder is a layer and imports only point down (README, "Layout"). The workflow bundle
// additionally reaches nothing but the domain, the SDK's workflow-safe packages and type-only imports.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, posix, relative } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { bundleLeaks, importsOf, LAYERS, rank, reachedFrom, unshippable, upwardImports } from '../harness/layers.js';

const root = fileURLToPath(new URL('..', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(join(root, dir)).flatMap((name) => {
    const path = posix.join(dir, name);
    if (statSync(join(root, path)).isDirectory()) return name === 'histories' && dir === 'test' ? [] : sources(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

const allEdges = LAYERS.flat().flatMap((dir) =>
  sources(dir).flatMap((file) => importsOf(file, readFileSync(join(root, file), 'utf8'))),
);

describe('layers', () => {
  test('no import runs back up a layer', () => {
    assert.deepEqual(upwardImports(allEdges), []);
  });

  test('workflow code imports values only from the domain and itself (the bundle stays free of Node modules)', () => {
    assert.deepEqual(bundleLeaks(allEdges), []);
  });

  test('the domain imports nothing outside itself, not even a package', () => {
    const outside = sources('domain').flatMap((file) =>
      [...readFileSync(join(root, file), 'utf8').matchAll(/from\s+'([^']+)'/g)]
        .map((m) => m[1] ?? '')
        .filter((spec) => !spec.startsWith('./'))
        .map((spec) => `${file} → ${spec}`),
    );
    assert.deepEqual(outside, []);
  });

  test('the checks bite: planted upward and bundle-leaking imports are reported', () => {
    const planted = [
      ...importsOf('ledger/schema.ts', "import { x } from '../workflows/stages.js';"),
      ...importsOf('client/effect-ledger-client.ts', "import type { y } from '../workers/config.js';"),
      ...importsOf('domain/stages.ts', "export { z } from '../ledger/db.js';"),
      ...importsOf('workflows/effect-workflow.ts', "import {\n  a,\n} from '../activities/index.js';"),
      ...importsOf('workflows/effect-workflow.ts', "import type { b } from '../activities/index.js';"),
      ...importsOf('scripts/demo.ts', "import { c } from '../ledger/db.js';"),
    ];
    assert.deepEqual(upwardImports(planted), [
      'ledger/schema.ts → workflows/stages.js',
      'client/effect-ledger-client.ts → workers/config.js',
      'domain/stages.ts → ledger/db.js',
    ]);
    assert.deepEqual(bundleLeaks(planted), ['workflows/effect-workflow.ts → activities/index.js']);
  });

  test('the package reaches only the folders it ships (and the operator CLI): nothing of the harness or the tests', () => {
    const build = JSON.parse(readFileSync(join(root, 'tsconfig.build.json'), 'utf8').replace(/^\s*\/\/.*$/gm, '')) as {
      files: string[];
    };
    const reached = reachedFrom(build.files, (file) => readFileSync(join(root, file), 'utf8'));
    assert.deepEqual(unshippable(reached), []);
    for (const folder of ['stack', 'conformance'])
      assert.ok(
        reached.some((f) => f.startsWith(`${folder}/`)),
        `the package ships ${folder}/`,
      );
    // It bites: a shipped module importing the harness drags it (and what it imports) into the package.
    const planted: Record<string, string> = {
      'conformance/run.ts': "import { startStack } from '../harness/local-stack.js';",
      'harness/local-stack.ts': "import { x } from './simulator/client.js';",
    };
    assert.deepEqual(unshippable(reachedFrom(['conformance/run.ts'], (file) => planted[file] ?? null)).sort(), [
      'harness/local-stack.ts',
      'harness/simulator/client.ts',
    ]);
  });

  test('every top-level folder with code is a declared layer', () => {
    const folders = readdirSync(root).filter(
      (name) =>
        !name.startsWith('.') && !['node_modules', 'dist'].includes(name) && statSync(join(root, name)).isDirectory(),
    );
    const withCode = folders.filter((name) => sources(name).length > 0);
    assert.deepEqual(
      withCode.filter((name) => rank(name) < 0),
      [],
    );
    assert.ok(relative(root, dirname(fileURLToPath(import.meta.url))) === 'test');
  });
});
