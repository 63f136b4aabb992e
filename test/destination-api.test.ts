// The public destination API without a server: a contract or a destination defined wrongly is refused with
// every issue named; modules load by path, with `built-in` and duplicate names handled; approvals validate
// against the destinations a client was given; the contract half imports no adapter's dependencies.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { builtInContracts } from '../activities/destinations/built-in-contracts.js';
import {
  type HttpDestinationSpec,
  httpContract,
  httpDestination,
} from '../activities/destinations/http-destination.js';
import { keyedApiSpec } from '../activities/destinations/keyed-api.js';
import { DestinationModuleError, loadDestinations } from '../client/destination-modules.js';
import { approvalRecords, validateEffectRequest } from '../client/effect-request.js';
import {
  catalogOf,
  contractIssues,
  DestinationDefinitionError,
  defineContract,
  defineDestination,
} from '../domain/destination.js';
import type { DestinationContract } from '../domain/destination-contract.js';
import { importsOf } from '../harness/layers.js';
import { InvalidEffectRequestError } from '../ledger/errors.js';

const root = fileURLToPath(new URL('..', import.meta.url));

const sound: DestinationContract = {
  name: 'payments',
  mechanism: 'idempotency_key',
  keyRetentionSeconds: 86_400,
  keyScope: 'revision',
  operations: { 'refund.create': z.object({ charge: z.string(), amount: z.number().int() }).strict() },
  callTimeoutMs: 5000,
  retryAfterProvenAbsence: true,
  absenceGraceMs: 2000,
  readbackMaxIntervalMs: 3_600_000,
  buildPackage: (reference, _operation, payload) => ({
    target: `refund of ${String(payload.charge)}`,
    body: { ...payload, metadata: { ref: reference } },
  }),
  describe: (_operation, payload) => `refund on ${String(payload.charge)}`,
};

const connection = {
  send: async () => ({ class: 'not_sent' as const, detail: { reason: 'unused' } }),
  readBack: async () => ({
    outcome: 'inconclusive' as const,
    coverage: 'partial' as const,
    detail: { method: 'x', reason: 'unused' },
  }),
  lookup: async () => ({ exists: false as const }),
  resolveUrl: () => null,
  objectUrlShape: 'none',
};

function refusal(define: () => unknown): string[] {
  try {
    define();
  } catch (error) {
    assert.ok(error instanceof DestinationDefinitionError, String(error));
    return [...error.issues];
  }
  assert.fail('accepted');
}

describe('defining a destination', () => {
  test('a sound contract passes; each planted defect is named, and nothing else is', () => {
    assert.equal(defineContract(sound), sound);
    for (const contract of builtInContracts) assert.deepEqual(contractIssues(contract), [], contract.name);
    const planted: Array<[Partial<Record<keyof DestinationContract, unknown>>, RegExp]> = [
      [{ name: 'Payments API' }, /^name:/],
      [{ name: '' }, /^name:/],
      [{ mechanism: 'exactly_once' }, /^mechanism:/],
      [{ keyScope: 'global' }, /^keyScope:/],
      [{ keyRetentionSeconds: null }, /^keyRetentionSeconds: how long the provider remembers a key/],
      [{ mechanism: 'none', keyRetentionSeconds: -1 }, /^keyRetentionSeconds: whole seconds/],
      [{ callTimeoutMs: 0 }, /^callTimeoutMs:/],
      [{ callTimeoutMs: 3_600_000 }, /^callTimeoutMs:/],
      [{ absenceGraceMs: -1 }, /^absenceGraceMs:/],
      [{ readbackMaxIntervalMs: 0.5 }, /^readbackMaxIntervalMs:/],
      [{ retryAfterProvenAbsence: 'yes' }, /^retryAfterProvenAbsence:/],
      [{ operations: {} }, /^operations:/],
      [{ operations: { 'refund.create': { parse: () => ({}) } } }, /^operations\.refund\.create:/],
      [{ steps: { 'refund.split': () => [] } }, /^steps\.refund\.split: not one of the operations/],
      [{ buildPackage: undefined }, /^buildPackage:/],
      [{ describe: 'refund' }, /^describe:/],
    ];
    for (const [change, expected] of planted) {
      const issues = refusal(() => defineContract({ ...sound, ...change } as DestinationContract));
      assert.equal(issues.length, 1, `${JSON.stringify(Object.keys(change))}: ${issues.join(' | ')}`);
      assert.match(issues[0] ?? '', expected);
    }
  });

  test('connect: undefined is "not hosted here"; a connection missing a call is refused; the contract stays the contract', () => {
    const destination = defineDestination({
      contract: sound,
      connect: ({ env }) => (env.PAYMENTS_URL ? { ...connection, callTimeoutMs: 1 } : undefined),
    });
    assert.equal(destination.contract, sound);
    assert.equal(destination.connect({ env: {} }), undefined);
    const adapter = destination.connect({ env: { PAYMENTS_URL: 'http://127.0.0.1:1' } });
    assert.equal(adapter?.name, 'payments');
    assert.equal(adapter?.callTimeoutMs, 5000, 'a connection cannot redefine what approvals were validated against');
    const { readBack: _, ...partial } = connection;
    const broken = defineDestination({ contract: sound, connect: () => partial as typeof connection });
    assert.deepEqual(
      refusal(() => broken.connect({ env: {} })),
      ['connect() returned no readBack function'],
    );
    assert.deepEqual(
      refusal(() => defineDestination({ contract: sound } as never)).map((i) => i.split(':')[0]),
      ['connect'],
    );
  });

  test('a catalog names each destination once', () => {
    assert.deepEqual(
      Object.keys(
        catalogOf([sound, defineDestination({ contract: keyedApiContractLike(), connect: () => undefined })]),
      ),
      ['payments', 'keyed-api'],
    );
    assert.deepEqual(
      refusal(() => catalogOf([sound, { ...sound }])),
      ['defined twice: every name names one destination'],
    );
  });

  test('a declared HTTP destination is refused when it could not be read back or classified honestly', () => {
    const spec = keyedApiSpec;
    const planted: Array<[Partial<HttpDestinationSpec>, RegExp]> = [
      [{ object: { ...spec.object, path: '/v1/objects' } }, /^object\.path:/],
      [{ readback: [] }, /^readback:/],
      [{ idempotencyKey: undefined }, /^readback\[0\]: by key needs idempotencyKey/],
      [
        { readback: [{ by: 'reference', path: '/v1/objects', items: 'data', hasMore: 'has_more', cursorParam: 'x' }] },
        /must hold \{reference\}/,
      ],
      [{ statuses: { 200: { class: 'unknown', reason: 'never' } } }, /^statuses\.200: a non-2xx/],
      [{ statuses: { 429: { class: 'not_sent', reason: ' ' } } }, /^statuses\.429\.reason:/],
      // Named as the user wrote it, not as the contract calls it (keyRetentionSeconds).
      [
        { idempotencyKey: { ...spec.idempotencyKey!, retentionSeconds: 0 } },
        /^idempotencyKey\.retentionSeconds: how long the provider remembers a key/,
      ],
      [
        {
          readback: [
            {
              by: 'listing',
              path: '/p',
              items: 'data',
              nextCursor: 'n',
              cursorParam: 'c',
              maxPages: 2,
              clockToleranceMs: -1,
            },
          ],
        },
        /^readback\[0\]\.clockToleranceMs:/,
      ],
      [
        { absenceGraceMs: 1000, readback: [spec.readback[0]!, { ...spec.readback[1]!, lagMs: 5000 } as never] },
        /^absenceGraceMs: 1000 ms is shorter than readback\[1\]\.lagMs/,
      ],
      // Pacing the readbacks cannot serve: a rate whose turns never come, or pages that cannot fit in a readback.
      [{ readbackRatePerSecond: 0.1 }, /^readbackRatePerSecond: .*at least 0\.105/],
      [
        { readbackRatePerSecond: 0.5, readback: [spec.readback[0]!, { ...spec.readback[1]!, maxPages: 100 } as never] },
        /^readbackRatePerSecond: a readback makes up to 102 requests .* 214 s/,
      ],
      // "Not sent" only for a 4xx promise of "not processed", and only where a key dedupes the resend (issue 26).
      [
        {
          idempotencyKey: undefined,
          readback: [spec.readback[1]!],
          statuses: { 503: { class: 'not_sent', reason: 'doc' } },
        },
        /^statuses\.503\.class: not_sent needs an idempotencyKey/,
      ],
      [
        {
          idempotencyKey: undefined,
          readback: [spec.readback[1]!],
          statuses: { 429: { class: 'not_sent', reason: 'doc' } },
        },
        /^statuses\.429\.class: not_sent needs an idempotencyKey/,
      ],
      [{ statuses: { 503: { class: 'not_sent', reason: 'doc' } } }, /^statuses\.503\.class: not_sent only for a 4xx/],
      [{ statuses: { 307: { class: 'not_sent', reason: 'doc' } } }, /^statuses\.307\.class: not_sent only for a 4xx/],
      [{ statuses: { 409: { class: 'not_sent', reason: 'doc' } } }, /^statuses\.409\.class: not_sent only for a 4xx/],
      [{ statuses: { 409: { class: 'rejected', reason: 'doc' } } }, /^statuses\.409\.class: rejected only for/],
      [{ statuses: { 302: { class: 'rejected', reason: 'doc' } } }, /^statuses\.302\.class: rejected only for/],
      [{ statuses: { 500: { class: 'rejected', reason: 'doc' } } }, /^statuses\.500\.class: rejected only for/],
      [{ statuses: { 500: { class: 'confirmed' as never, reason: 'x' } } }, /^statuses\.500\.class:/],
      [{ reference: 'metadata..ref' }, /^reference:/],
      [
        { object: { ...spec.object, createdAt: { path: 'created', format: 'unix' as never } } },
        /^object\.createdAt\.format:/,
      ],
      [{ object: { ...spec.object, createdAt: 'created..at' } }, /^object\.createdAt:/],
    ];
    const named = (() => {
      try {
        httpContract({ ...spec, idempotencyKey: { ...spec.idempotencyKey!, retentionSeconds: 0 } });
      } catch (error) {
        return error;
      }
    })();
    assert.ok(named instanceof DestinationDefinitionError);
    assert.equal(named.field, 'idempotencyKey.retentionSeconds');
    // A hand-written contract below the pacing's floor is refused too.
    assert.deepEqual(
      refusal(() => defineContract({ ...sound, readbackRatePerSecond: 0.05 })).map((i) => i.split(':')[0]),
      ['readbackRatePerSecond'],
    );
    for (const [change, expected] of planted) {
      const issues = refusal(() => httpContract({ ...spec, ...change }));
      assert.equal(issues.length, 1, `${JSON.stringify(Object.keys(change))}: ${issues.join(' | ')}`);
      assert.match(issues[0] ?? '', expected);
    }
    // What may stand: a keyed 429-like "not processed", a definitive 4xx refused, anything as unknown.
    httpContract({
      ...spec,
      statuses: {
        423: { class: 'not_sent', reason: 'documented: locked, not processed' },
        402: { class: 'rejected', reason: 'documented: card declined' },
        503: { class: 'unknown', reason: 'may follow a write' },
      },
    });
    // A body that does not carry the reference where readback looks is refused at approval, not sent.
    const unstamped = httpContract({
      ...spec,
      operations: { 'task.create': { schema: z.object({ title: z.string() }), path: '/v1/objects', body: (p) => p } },
      plans: {},
    });
    assert.throws(
      () => unstamped.buildPackage('task:1', 'task.create', { title: 't' }),
      /must carry the step's reference/,
    );
    // The default body stamps the reference, and the default target names the filled path.
    const stamped = httpContract({
      ...spec,
      operations: {
        'refund.create': { schema: z.object({ charge: z.string() }), path: '/v1/charges/{charge}/refunds' },
      },
      plans: {},
    });
    assert.deepEqual(stamped.buildPackage('refund:1', 'refund.create', { charge: 'ch 1' }), {
      target: 'POST /v1/charges/ch%201/refunds',
      body: { charge: 'ch 1', metadata: { effect_id: 'refund:1' } },
    });
    // A path field that would move the request elsewhere once the URL is normalised refuses the approval, typed.
    const dotted = catalogOf([stamped]);
    const request = {
      effectId: 'refund:dots',
      destination: 'keyed-api',
      operation: 'refund.create',
      payload: { charge: '..' },
      approvedBy: 'ana@example.com',
      authorizationRef: 'T-1',
    };
    assert.throws(
      () => approvalRecords(validateEffectRequest(request, dotted), dotted),
      (error) => error instanceof InvalidEffectRequestError && /no usable value/.test(error.message),
    );
    const hosted = httpDestination({ ...spec, baseUrl: ({ env }) => env.KEYED_URL });
    assert.equal(hosted.connect({ env: {} }), undefined);
    assert.equal(
      hosted.connect({ env: { KEYED_URL: 'http://127.0.0.1:9/' } })?.objectUrlShape,
      'http://127.0.0.1:9/v1/objects/<id>',
    );
  });
});

function keyedApiContractLike(): DestinationContract {
  return { ...sound, name: 'keyed-api' };
}

describe('destinations modules and the destinations a client is given', () => {
  const dir = mkdtempSync(join(tmpdir(), 'effect-ledger-destinations-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const write = (name: string, text: string) => {
    writeFileSync(join(dir, name), text);
    return `./${name}`;
  };
  const contractSource = (name: string) => `{
    name: '${name}', mechanism: 'none', keyRetentionSeconds: null, keyScope: 'effect',
    operations: { 'note.add': { safeParse: (v) => ({ success: true, data: v }) } },
    callTimeoutMs: 1000, retryAfterProvenAbsence: false, absenceGraceMs: 0, readbackMaxIntervalMs: 1000,
    buildPackage: (ref, op, payload) => ({ target: 'note', body: { ...payload, ref } }),
    describe: () => 'a note',
  }`;

  test('a module by path: its default export, or `destinations`; `built-in` adds the shipped ones; unset, the built-ins', async () => {
    const one = write('one.mjs', `export default [${contractSource('notes')}];`);
    const two = write('two.mjs', `export const destinations = [${contractSource('memos')}];`);
    const names = async (setting: string | undefined) =>
      (await loadDestinations(setting, builtInContracts, dir)).map((d) => ('contract' in d ? d.contract.name : d.name));
    assert.deepEqual(await names(`${one}, ${two}`), ['notes', 'memos']);
    assert.deepEqual(await names(`built-in,${one}`), [...builtInContracts.map((c) => c.name), 'notes']);
    assert.deepEqual(
      await names(undefined),
      builtInContracts.map((c) => c.name),
    );
    assert.deepEqual(
      await names(' , '),
      builtInContracts.map((c) => c.name),
    );
  });

  test('a module that cannot load, exports nothing usable, or repeats a name is refused, naming it', async () => {
    const empty = write('empty.mjs', 'export const other = 1;');
    const wrong = write('wrong.mjs', `export default [{ name: 'x' }];`);
    const one = write('again.mjs', `export default [${contractSource('notes')}];`);
    await assert.rejects(loadDestinations('./missing.mjs', builtInContracts, dir), DestinationModuleError);
    await assert.rejects(loadDestinations(empty, builtInContracts, dir), /exports no destinations/);
    await assert.rejects(loadDestinations(wrong, builtInContracts, dir), /entry 0 is neither a destination/);
    await assert.rejects(loadDestinations(`${one},${one}`, builtInContracts, dir), /defined twice/);
  });

  test('approvals validate against the destinations given, not a fixed list', () => {
    const request = {
      effectId: 'refund:R-1',
      destination: 'payments',
      operation: 'refund.create',
      payload: { charge: 'ch_1', amount: 100 },
      approvedBy: 'ana@example.com',
      authorizationRef: 'T-1',
    };
    assert.throws(
      () => validateEffectRequest(request),
      (error) => error instanceof InvalidEffectRequestError && error.code === 'unknown_destination',
    );
    const mine = catalogOf([sound]);
    assert.equal(validateEffectRequest(request, mine).contract, sound);
    assert.throws(
      () => validateEffectRequest({ ...request, destination: 'keyed-api' }, mine),
      (error) => error instanceof InvalidEffectRequestError && /known: payments/.test(error.issues.join()),
    );
    assert.throws(
      () => validateEffectRequest({ ...request, payload: { charge: 'ch_1', amount: 1.5 } }, mine),
      (error) => error instanceof InvalidEffectRequestError && error.code === 'invalid_payload',
    );
  });
});

/** Every module a module reaches through relative imports, and the packages those import. */
function closure(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string) => {
    if (files.has(file)) return;
    files.add(file);
    const source = readFileSync(join(root, file), 'utf8');
    for (const match of source.matchAll(
      /(?:^|\n)\s*(?:import|export)\s+(type\s+)?(?:[^'";]*?\sfrom\s+)?'([^'.][^']*)'/g,
    ))
      if (!match[1]) packages.add(match[2] ?? '');
    for (const edge of importsOf(file, source)) if (!edge.typeOnly) visit(edge.to.replace(/\.js$/, '.ts'));
  };
  visit(entry);
  return { files, packages };
}

describe('the contract half loads no adapter', () => {
  test("'effect-ledger' and 'effect-ledger/destinations' reach no adapter module and none of its packages", () => {
    const adapters = ['email-smtp.ts', 'nats-jetstream.ts', 'orders-sql.ts', 'registry.ts', 'built-in.ts'].map((f) =>
      posix.join('activities/destinations', f),
    );
    const adapterPackages = ['nodemailer', '@nats-io/jetstream', '@nats-io/transport-node'];
    for (const entry of ['client/index.ts', 'activities/destinations/index.ts']) {
      const { files, packages } = closure(entry);
      assert.deepEqual(
        adapters.filter((f) => files.has(f)),
        [],
        entry,
      );
      assert.deepEqual(
        adapterPackages.filter((p) => packages.has(p)),
        [],
        entry,
      );
    }
    // The destinations entry is lighter still: no Temporal, no ledger driver.
    const { packages } = closure('activities/destinations/index.ts');
    assert.deepEqual(
      [...packages].filter((p) => p.startsWith('@temporalio') || p === 'postgres' || p.startsWith('drizzle')),
      [],
    );
    // The check bites: the worker entry does reach the adapters.
    const worker = closure('workers/index.ts');
    assert.ok(worker.files.has('activities/destinations/email-smtp.ts'));
    assert.ok(worker.packages.has('nodemailer'));
  });
});
