// Every snippet in docs/ runs as shown (issue 28): each fenced block says, in an HTML comment just above it,
// which tested file it is line for line, which test runs it, or why a reader does not copy it (sample output,
// a diagram). test/readme.test.ts compares the files; this finds the blocks that say nothing, or say
// something untrue.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import { bodySha256Of } from '../activities/destinations/index.js';
import { revisionProblem } from '../conformance/run.js';
import crmDestinations, { crmContract } from './doc-snippets/crm-destination.js';
import { refunds, refusedPayload, sample, strictRefunds } from './doc-snippets/refunds.js';
import stripeRefunds from './doc-snippets/stripe-refunds.js';
import { blockProblems, fencedBlocks, projectRoot, readDoc } from './support/doc-blocks.js';

function source(path: string): string | undefined {
  const file = join(projectRoot, path);
  return existsSync(file) ? readFileSync(file, 'utf8') : undefined;
}

test('every fenced block in docs/ is a tested file, run by a test, or says why it is not copied', () => {
  const pages = readdirSync(join(projectRoot, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`);
  const checked = pages;
  const tests = readdirSync(join(projectRoot, 'test'))
    .filter((name) => name.endsWith('.test.ts'))
    .map((name) => `test/${name}`);
  const problems = checked.flatMap((page) => blockProblems(page, readDoc(page), source, tests));
  assert.deepEqual(problems, [], problems.join('\n'));
  const blocks = checked.reduce((n, page) => n + fencedBlocks(readDoc(page)).length, 0);
  assert.ok(blocks >= 30, `${blocks} blocks checked`);
});

test('the check bites: an unmarked block, a test that never reads the page, pasted code "not copied", untested files', () => {
  const files: Record<string, string> = {
    'test/x.test.ts':
      "const page = readDoc('docs/x.md'); blockAfter(page, 'test/x.test.ts runs the block below'); run('d.mjs');",
    'test/y.test.ts': "blockAfter(readDoc('docs/other.md'), 'test/y.test.ts runs the block below');",
    'test/doc-snippets/a.ts': 'export {};',
    'test/consumer/b.mjs': 'export {};',
    'elsewhere/c.ts': 'export {};',
    'test/consumer/d.mjs': 'export {};',
    'tsconfig.json': JSON.stringify({ include: ['test'] }),
  };
  const page = [
    '# X', //                                                                    1
    '<!-- test/x.test.ts runs the block below -->', //                         2
    '```sh', //                                                                 3: fine
    'temporal operator namespace list',
    '```',
    '',
    '```sh', //                                                                 7: unmarked
    'npm run demo',
    '```',
    '<!-- test/y.test.ts runs the block below -->',
    '```sh', //                                                                11: y never reads docs/x.md
    'npm run demo',
    '```',
    '<!-- not copied: a sample -->',
    '```ts', //                                                                15: code said not copied
    'await ledger.close();',
    '```',
    '<!-- The block below is test/doc-snippets/a.ts line for line -->',
    '```ts', //                                                                19: fine
    'export {};',
    '```',
    '- a list item:',
    '',
    '  ```ts', //                                                              24: indented, unmarked
    '  const x = 1;',
    '  ```',
    '<!-- not copied: what the kit prints -->',
    '```', //                                                                  28: fine
    'email-smtp · natural_key',
    '```',
    '<!-- The block below is test/doc-snippets/a.ts line for line -->',
    '```js', //                                                                32: a .ts file shown as JavaScript
    'export {};',
    '```',
    '<!-- The block below is test/consumer/b.mjs line for line -->',
    '```js', //                                                                36: a file no test runs
    'export {};',
    '```',
    '<!-- The block below is elsewhere/c.ts line for line -->',
    '```ts', //                                                                40: a file tsc does not compile
    'export {};',
    '```',
    '<!-- The block below is test/consumer/d.mjs line for line -->',
    '```js', //                                                                44: fine: test/x.test.ts runs it
    'export {};',
    '```',
  ].join('\n');
  const problems = blockProblems('docs/x.md', page, (path) => files[path], ['test/x.test.ts', 'test/y.test.ts']);
  assert.deepEqual(
    problems.map((problem) => /^docs\/x\.md:(\d+):/.exec(problem)?.[1]),
    ['7', '11', '15', '24', '32', '36', '40'],
    problems.join('\n'),
  );
  assert.match(problems[0] ?? '', /docs\/x\.md:7: the ```sh block has no comment/);
  assert.match(problems[1] ?? '', /test\/y\.test\.ts never reads docs\/x\.md/);
});

test("docs/conformance.md's refunds: no refused payload for the strict declaration, one for the other", () => {
  // test/doc-snippets/refunds.ts, which the page shows, through the check the kit makes of each revision cell.
  assert.equal(revisionProblem(refunds.contract, { sample, refusedPayload }), undefined);
  assert.match(
    revisionProblem(strictRefunds.contract, { sample, refusedPayload }) ?? '',
    /^the target's refusedPayload is refused at approval \(amount: /,
  );
  const overLimit = { ...refusedPayload, amount: 999_999 };
  assert.equal(
    revisionProblem(strictRefunds.contract, { sample, refusedPayload: overLimit }),
    `the target's refusedPayload has the target "refund of 999999 on ch_1", the sample "refund of 100 on ch_1": a revision may not change the target, so the revision cells need a refused payload with the sample's target (docs/conformance.md)`,
  );
});

test("docs/your-own-destination.md's Stripe-shaped refunds: httpDestination accepts the declaration", () => {
  // test/doc-snippets/stripe-refunds.ts, which the page shows: importing it defined it (a refused declaration
  // throws DestinationDefinitionError); it hosts itself where REFUNDS_URL is set, and only there.
  const [destination] = stripeRefunds;
  assert.equal(destination?.contract.name, 'refunds');
  assert.equal(destination?.contract.mechanism, 'idempotency_key');
  assert.equal(destination?.connect({ env: {} }), undefined);
  assert.equal(destination?.connect({ env: { REFUNDS_URL: 'https://api.example' } })?.name, 'refunds');
});

test("docs/your-own-destination.md's hand-written CRM: sends, reads back, looks up; a timeout after the request left is unknown", async () => {
  // test/doc-snippets/crm-destination.ts, which the page shows, against a stub CRM on this machine.
  const notes: Record<string, unknown>[] = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://crm');
    let text = '';
    req.on('data', (chunk: Buffer) => {
      text += chunk.toString();
    });
    req.on('end', () => {
      const body = text ? (JSON.parse(text) as Record<string, unknown>) : {};
      if (req.method === 'POST' && body.contact === 'slow') return; // lands, never answers: the call times out
      res.setHeader('content-type', 'application/json');
      if (req.method === 'POST') {
        const note = { id: `n${notes.length + 1}`, ...body, created_at: new Date().toISOString() };
        notes.push(note);
        return res.writeHead(201).end(JSON.stringify(note));
      }
      if (url.pathname === '/v1/notes') {
        const data = notes.filter((note) => note.external_ref === url.searchParams.get('external_ref'));
        return res.end(JSON.stringify({ data, has_more: false }));
      }
      const note = notes.find((n) => `/v1/notes/${n.id}` === url.pathname);
      return note ? res.end(JSON.stringify(note)) : res.writeHead(404).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const [destination] = crmDestinations;
    assert.equal(destination?.connect({ env: {} }), undefined, 'no CRM_URL: not hosted here');
    const crm = destination?.connect({ env: { CRM_URL: baseUrl }, credential: 'secret' }) ?? assert.fail();
    const release = (effectId: string, contact: string) => {
      const pkg = crmContract.buildPackage(effectId, 'note.create', { contact, text: 'called back' });
      return {
        send: { effectId, idempotencyKey: effectId, operation: 'note.create', package: pkg, timeoutMs: 2_000 },
        readback: {
          effectId,
          idempotencyKey: effectId,
          package: pkg,
          bodySha256: bodySha256Of(pkg.body),
          since: new Date(Date.now() - 60_000).toISOString(),
        },
      };
    };
    const one = release('note:1', 'cus_1');
    const sent = await crm.send(one.send);
    assert.equal(sent.class, 'confirmed', JSON.stringify(sent));
    const found = await crm.readBack(one.readback);
    assert.deepEqual([found.outcome, found.coverage], ['found', 'complete']);
    assert.equal(found.outcome === 'found' && found.externalId, 'n1');
    assert.equal(crm.resolveUrl(`${baseUrl}/v1/notes/n1`), 'n1');
    assert.deepEqual(await crm.lookup('n1', one.readback), {
      exists: true,
      externalId: 'n1',
      externalUrl: `${baseUrl}/v1/notes/n1`,
      occurredAt: (notes[0] as { created_at: string }).created_at,
      matchesRelease: true,
    });
    assert.equal((await crm.readBack(release('note:2', 'cus_1').readback)).outcome, 'absent');
    const slow = release('note:3', 'slow');
    const timedOut = await crm.send({ ...slow.send, timeoutMs: 300 });
    assert.equal(timedOut.class, 'unknown', JSON.stringify(timedOut));
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});
