// PLANTED, test-only: one unsafe destination per provider-shape fault of the conformance kit (issue 26), each
// as a user would write it, on the provider simulator, and the fault that must expose it, by name. All in one
// place: where the destination API comes to refuse one at definition, its entry says so (`refusedAtDefinition`)
// and test/conformance-planted.test.ts asserts the refusal instead. test/conformance-planted.test.ts runs each on
// its fault's row (main step) and expects the violations named here.
import type { HttpDestinationSpec, ReferenceReadback } from '../../activities/destinations/http-destination.js';
import { httpAdapter, httpContract } from '../../activities/destinations/http-destination.js';
import { classifyTransportError } from '../../activities/destinations/http-outcome.js';
import { keyedApiSpec } from '../../activities/destinations/keyed-api.js';
import { socialFeedSpec } from '../../activities/destinations/social-feed.js';
import type { FaultName } from '../../conformance/faults.js';
import type { ConformanceTarget, ConformanceTargets } from '../../conformance/target.js';
import { type Destination, DestinationDefinitionError, defineDestination } from '../../domain/destination.js';
import type { DestinationAdapter, ReadbackResult, SendOutcome } from '../../domain/destination-contract.js';
import { keyedApiTarget, socialFeedTarget } from '../../harness/conformance-targets.js';

export interface PlantedDeclaration {
  name: string;
  /** The fault whose row it must fail. */
  fault: FaultName;
  /** What is unsafe about it, in a few words (the report's). */
  unsafe: string;
  /** The destination as the user's module exports it; a thunk, so a refusal at definition can be caught. */
  define: () => Destination;
  target: ConformanceTarget;
  /** The violations its row must show, each matched against one of the row's. */
  violations: RegExp[];
  /**
   * What the refusal must name where the destination API refuses the declaration at definition (issue 26's fix
   * refuses some): a refused declaration is not run; one that is still accepted must fail its row.
   */
  refusedAtDefinition?: RegExp;
}

/** A target on the simulator whose `declaration` is the planted one: the kit's proxy reads its fields. */
function declared(base: () => ConformanceTarget, declaration: HttpDestinationSpec): ConformanceTarget {
  return { start: async () => ({ ...(await base().start()), declaration }) };
}

const viaEnv = (spec: HttpDestinationSpec) =>
  defineDestination({
    contract: httpContract(spec),
    connect: ({ env }) =>
      env.EFFECT_LEDGER_PROVIDER_URL ? httpAdapter(spec, { baseUrl: env.EFFECT_LEDGER_PROVIDER_URL }) : undefined,
  });

/** The feed (key-less, read back by its listing), under a name of its own; absence over the listing is trusted. */
const feed = (name: string): HttpDestinationSpec => ({ ...socialFeedSpec, name, retryAfterProvenAbsence: true });

/**
 * A listing readback written by hand as the declarative one read before issue 26: it trusts the listing to be
 * newest first and the provider's clock to be within 5 s of the ledger's, so it stops at the first item older than
 * the attempt (less 5 s) and calls that "absent, complete".
 */
function trustingListing(declaration: HttpDestinationSpec, baseUrl: string): DestinationAdapter {
  const declared = httpAdapter(declaration, { baseUrl });
  const base = baseUrl.replace(/\/+$/, '');
  type Post = { id: string; created_at: string; body_sha256: string; metadata?: { effect_id?: string } };
  return {
    ...declared,
    async readBack(request): Promise<ReadbackResult> {
      const since = Date.parse(request.since) - 5_000;
      let cursor: string | null = null;
      for (let page = 0; page < 2; page++) {
        await request.beforeRequest?.();
        const url = `${base}/social/v1/posts?page_size=50${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
        const answer = await fetch(url, request.signal ? { signal: request.signal } : {});
        if (!answer.ok) throw new Error(`GET ${url} answered ${answer.status}`);
        const { data, next_cursor } = (await answer.json()) as { data: Post[]; next_cursor: string | null };
        const ours = data.find(
          (p) => p.metadata?.effect_id === request.effectId && p.body_sha256 === request.bodySha256,
        );
        const detail = { method: 'listing_scan', scanned: data.length };
        if (ours)
          return {
            outcome: 'found',
            coverage: 'complete',
            externalId: ours.id,
            occurredAt: ours.created_at,
            detail: { ...detail, reason: 'listed' },
          };
        if (!next_cursor || data.some((p) => Date.parse(p.created_at) < since))
          return {
            outcome: 'absent',
            coverage: 'complete',
            detail: { ...detail, reason: 'the listing reached back past the attempt' },
          };
        cursor = next_cursor;
      }
      return {
        outcome: 'inconclusive',
        coverage: 'partial',
        detail: { method: 'listing_scan', reason: 'two pages read' },
      };
    },
  };
}

const byHand = (
  declaration: HttpDestinationSpec,
  make: (spec: HttpDestinationSpec, baseUrl: string) => DestinationAdapter,
) =>
  defineDestination({
    contract: httpContract(declaration),
    connect: ({ env }) =>
      env.EFFECT_LEDGER_PROVIDER_URL ? make(declaration, env.EFFECT_LEDGER_PROVIDER_URL) : undefined,
  });

/** The keyed API without its key, read back only through its reference search. */
const searchOnly = (name: string): HttpDestinationSpec => {
  const { idempotencyKey: _, plans: __, ...keyless } = keyedApiSpec;
  return {
    ...keyless,
    name,
    readback: [keyedApiSpec.readback[1] as ReferenceReadback],
    retryAfterProvenAbsence: true,
  };
};

const clockSkew = feed('planted-listing-clock');
const pinned = feed('planted-listing-pinned');
const lagging = searchOnly('planted-search-lag');
const forgetful: HttpDestinationSpec = {
  ...keyedApiSpec,
  name: 'planted-key-forgotten',
  plans: {},
  // The provider keeps a key a second; readback rests on the key alone, and the key is trusted to dedupe a retry.
  idempotencyKey: {
    ...(keyedApiSpec.idempotencyKey as NonNullable<HttpDestinationSpec['idempotencyKey']>),
    retentionSeconds: 1,
  },
  readback: [keyedApiSpec.readback[0] as NonNullable<(typeof keyedApiSpec.readback)[0]>],
};
const notSent503: HttpDestinationSpec = {
  ...socialFeedSpec,
  name: 'planted-503-keyless',
  // "The docs say 503 means not processed" on an API that honours no key: the resend is a second post.
  statuses: { 503: { class: 'not_sent', reason: 'the provider documents 503 as not processed' } },
};
const outliving = searchOnly('planted-send-outlives-deadline');
// The time's format left unsaid (a plain path), as a user would: the kit then faults it with unix seconds.
const unsaidTime = { ...keyedApiSpec.object, createdAt: 'created_at' };
const asText: HttpDestinationSpec = {
  ...keyedApiSpec,
  name: 'planted-time-parsed-as-text',
  plans: {},
  object: unsaidTime,
};
const asMs: HttpDestinationSpec = { ...keyedApiSpec, name: 'planted-time-as-ms', plans: {}, object: unsaidTime };

/**
 * A hand-written send over a key-less API that returns at its deadline while its request goes on (an SDK's own
 * request, with no way to stop it): the deadline is kept, the request is not.
 */
function outlivingAdapter(baseUrl: string): DestinationAdapter {
  const declared = httpAdapter(outliving, { baseUrl });
  return {
    ...declared,
    async send({ package: pkg, timeoutMs }): Promise<SendOutcome> {
      const request = fetch(`${baseUrl.replace(/\/+$/, '')}/v1/objects`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(pkg.body),
      }).then(
        async (answer): Promise<SendOutcome> => {
          if (!answer.ok)
            return { class: 'unknown', httpStatus: answer.status, detail: { reason: `HTTP ${answer.status}` } };
          const body = (await answer.json()) as { id: string; created_at: string };
          return {
            class: 'confirmed',
            httpStatus: answer.status,
            externalId: body.id,
            occurredAt: body.created_at,
            detail: { reason: 'created' },
          };
        },
        (error: unknown) => classifyTransportError(error),
      );
      const deadline = new Promise<SendOutcome>((resolve) =>
        setTimeout(
          () => resolve({ class: 'unknown', detail: { reason: `no answer within ${timeoutMs} ms` } }),
          timeoutMs,
        ),
      );
      return Promise.race([request, deadline]);
    },
  };
}

/**
 * A hand-written adapter over the keyed API that reads the provider's creation time itself, with `read`, from the
 * object as the API answered it (the send's answer; the object, fetched, for a readback or a lookup).
 */
function readingTime(
  spec: HttpDestinationSpec,
  baseUrl: string,
  read: (created: unknown) => string,
): DestinationAdapter {
  // The hand-written code alone reads the time: the declared part is told of no time field (the declarative reader
  // reads unix seconds right since issue 26, which would hide what this code gets wrong).
  const declared = httpAdapter({ ...spec, object: { ...spec.object, createdAt: 'no_time_read_here' } }, { baseUrl });
  const base = baseUrl.replace(/\/+$/, '');
  const createdOf = async (id: string) =>
    ((await (await fetch(`${base}/v1/objects/${encodeURIComponent(id)}`)).json()) as { created_at?: unknown })
      .created_at;
  return {
    ...declared,
    async send(request) {
      const outcome = await declared.send(request);
      if (outcome.class !== 'confirmed') return outcome;
      return { ...outcome, occurredAt: read((outcome.detail.body as { created_at?: unknown }).created_at) };
    },
    async readBack(request) {
      const verdict = await declared.readBack(request);
      return verdict.outcome === 'found'
        ? { ...verdict, occurredAt: read(await createdOf(verdict.externalId)) }
        : verdict;
    },
    async lookup(externalId, request) {
      const seen = await declared.lookup(externalId, request);
      return seen.exists ? { ...seen, occurredAt: read(await createdOf(externalId)) } : seen;
    },
  };
}

/** The time taken as the ISO text it is assumed to be: `new Date("1733…")` is no time, and toISOString() throws. */
const parsedAsText = (created: unknown) => new Date(String(created)).toISOString();
/** Text read as ISO, a number taken for milliseconds (JavaScript's own unit): unix seconds become January 1970. */
const takenAsMs = (created: unknown) => new Date(typeof created === 'number' ? created : String(created)).toISOString();

export const PLANTED: readonly PlantedDeclaration[] = [
  {
    name: clockSkew.name,
    fault: 'clock-behind',
    unsafe: 'a listing readback by hand that trusts the provider’s clock within 5 s',
    define: () => byHand(clockSkew, trustingListing),
    target: declared(socialFeedTarget, clockSkew),
    violations: [
      /\(probe\): readback said absent .* but the object had landed/,
      /\(workflow\): the workflow left 2 objects/,
    ],
  },
  {
    name: pinned.name,
    fault: 'pinned-old-item',
    unsafe: 'a listing readback by hand that trusts the listing to be newest first',
    define: () => byHand(pinned, trustingListing),
    target: declared(socialFeedTarget, pinned),
    violations: [
      /\(probe\): readback said absent .* but the object had landed/,
      /\(workflow\): the workflow left 2 objects/,
    ],
  },
  {
    name: lagging.name,
    fault: 'search-lag',
    unsafe: 'a search that lags writes, declared with no lag and a short absence grace',
    define: () => viaEnv(lagging),
    target: declared(keyedApiTarget, lagging),
    violations: [
      /\(probe\): readback said absent .* but the object had landed/,
      /\(workflow\): the workflow left 2 objects/,
    ],
  },
  {
    name: forgetful.name,
    fault: 'key-forgotten',
    unsafe: 'a key kept 1 s, and a readback that rests on the key alone',
    define: () => viaEnv(forgetful),
    target: declared(keyedApiTarget, forgetful),
    violations: [
      /\(probe\): readback was inconclusive .* but the object had landed/,
      // Workflow v7 refuses a same-key retry past the key's retention without proven absence: the effect waits for a
      // person for good (before it, the kit's approved retry made a second object).
      /\(workflow\): (the workflow left 2 objects|the effect did not close .*The key stopped deduping)/,
    ],
  },
  {
    name: notSent503.name,
    fault: '503-after-commit',
    unsafe: '503 declared "not sent" on an API that honours no key',
    define: () => viaEnv(notSent503),
    target: declared(socialFeedTarget, notSent503),
    refusedAtDefinition: /^statuses\.503\.class: .*key/,
    violations: [
      /\(probe\): classified not_sent .* but the object landed/,
      /\(workflow\): the workflow left 2 objects/,
    ],
  },
  {
    name: outliving.name,
    fault: 'send-outlives-deadline',
    unsafe: 'a hand-written send that returns at its deadline and leaves its request running',
    define: () => byHand(outliving, (_, baseUrl) => outlivingAdapter(baseUrl)),
    target: declared(keyedApiTarget, outliving),
    violations: [/\(probe\): an object landed after the in-flight window/, /\(workflow\): the workflow left 2 objects/],
  },
  {
    name: asText.name,
    fault: 'epoch-timestamps',
    unsafe: 'a hand-written adapter that parses the creation time as ISO text',
    define: () => byHand(asText, (spec, baseUrl) => readingTime(spec, baseUrl, parsedAsText)),
    target: declared(keyedApiTarget, asText),
    violations: [
      /\(probe\): the send threw instead of answering a class: Invalid time value/,
      // The readback throws on every try: the effect waits for it for good, and the kit says which activity fails.
      /\(workflow\): the effect did not close .*failing, attempt \d+: .*Invalid time value/,
    ],
  },
  {
    name: asMs.name,
    fault: 'epoch-timestamps',
    unsafe: 'a hand-written adapter that takes the creation time for milliseconds',
    define: () => byHand(asMs, (spec, baseUrl) => readingTime(spec, baseUrl, takenAsMs)),
    target: declared(keyedApiTarget, asMs),
    violations: [
      /\(probe\): the send's time "1970-.*" is not when the object was made/,
      // Since issue 26 the send and readback activities refuse a fact time of January 1970 where it crosses into the
      // ledger (unknown, then inconclusive: a person decides): no wrong fact, but the effect never closes by itself.
      /\(workflow\): (the fact's time "1970-.*" is not when the object was made|the effect did not close .*occurredAt: 1970-)/,
    ],
  },
];

/**
 * The planted destinations the destination API lets a user declare, and those it refuses at definition (with
 * the refusal's issues): a refused one is not run.
 */
export function plantedModule(): {
  destinations: Destination[];
  conformance: ConformanceTargets;
  refused: Record<string, readonly string[]>;
} {
  const destinations: Destination[] = [];
  const conformance: Record<string, ConformanceTarget> = {};
  const refused: Record<string, readonly string[]> = {};
  for (const p of PLANTED) {
    try {
      destinations.push(p.define());
      conformance[p.name] = p.target;
    } catch (error) {
      if (!(error instanceof DestinationDefinitionError)) throw error;
      refused[p.name] = error.issues;
    }
  }
  return { destinations, conformance, refused };
}

const planted = plantedModule();
export default planted.destinations;
export const conformance = planted.conformance;
