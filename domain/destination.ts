// The public destination API: a destination is its contract (what the approving side validates against and
// the ledger records) and a way to connect to it (what a worker hosts). Backend code needs only contracts;
// workers connect. A destinations module's default export is an array of what defineDestination returns.
//
//   export default [
//     defineDestination({
//       contract: defineContract({ name: 'payments', mechanism: 'idempotency_key', … }),
//       connect: ({ env, credential }) => (env.PAYMENTS_URL ? paymentsAdapter(env.PAYMENTS_URL, credential) : undefined),
//     }),
//   ];
import {
  DEDUPE_MECHANISMS,
  type DestinationAdapter,
  type DestinationContract,
  MIN_READBACK_RATE_PER_SECOND,
} from './destination-contract.js';
import { KEY_SCOPES } from './idempotency-key.js';

/** What a worker gives a destination to connect with. */
export interface DestinationContext {
  /** The worker's environment (never a payload's): where the destination lives, its settings. */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** The destination's credential: `EFFECT_LEDGER_CREDENTIAL_<NAME>`, or the file `…_FILE` names. */
  readonly credential?: string;
}

/** The half of an adapter that talks to the destination: everything but the contract's fields. */
export type DestinationConnection = Omit<DestinationAdapter, keyof DestinationContract>;

export interface Destination {
  readonly contract: DestinationContract;
  /**
   * The adapter this worker hosts, or undefined when the worker is not configured for the destination (not
   * hosted here: its effects wait, visibly, for a worker that hosts it).
   */
  connect(context: DestinationContext): DestinationAdapter | undefined;
}

/** A destination as the approving side knows it: its contract alone is enough. */
export type KnownDestination = Destination | DestinationContract;

/** Contracts by destination name: what approvals, revisions and runs are validated against. */
export type DestinationCatalog = Readonly<Record<string, DestinationContract>>;

/** A destination defined wrongly: what is wrong, by field. Nothing is registered. */
export class DestinationDefinitionError extends Error {
  override readonly name = 'DestinationDefinitionError';
  /** The field of the declaration each issue names, as the user wrote it (`idempotencyKey.retentionSeconds`). */
  readonly fields: readonly string[];
  constructor(
    readonly destination: string,
    readonly issues: readonly string[],
  ) {
    super(`destination ${destination} is defined wrongly: ${issues.join('; ')}`);
    this.fields = issues.map((issue) => issue.split(':')[0] ?? issue);
  }
  /** The first field named (most refusals name one). */
  get field(): string {
    return this.fields[0] ?? '';
  }
}

/**
 * A provider's answer that cannot be read as the declaration says (a creation time in another format, an object
 * without its ID): which field, what it held. Never retried as if it were a network error: the same answer would be
 * read the same way. The send records it as unknown (readback settles it); a readback says it, inconclusive, and a
 * person decides with the object's ID in front of them; nothing unreadable reaches the ledger.
 */
export class DestinationResponseError extends Error {
  override readonly name = 'DestinationResponseError';
  constructor(
    readonly destination: string,
    /** The declaration's field, as the user wrote it: `object.createdAt`, `object.id`. */
    readonly field: string,
    message: string,
    /** The object the answer was about, when its ID could be read. */
    readonly objectId?: string,
  ) {
    super(`${destination}: ${field}: ${message}`);
  }
}

/** Destination names: what effects, releases and facts store (1–64 characters in the ledger). */
export const DESTINATION_NAME_SOURCE = '^[a-z0-9][a-z0-9._-]{0,63}$';
const DESTINATION_NAME = new RegExp(DESTINATION_NAME_SOURCE);

/** The longest call timeout a contract may declare: the send activity runs it with a few seconds more. */
export const MAX_CALL_TIMEOUT_MS = 10 * 60 * 1000;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const isWhole = (value: unknown, min: number, max = Number.MAX_SAFE_INTEGER) =>
  Number.isSafeInteger(value) && (value as number) >= min && (value as number) <= max;

/** What is wrong with a contract, field by field; empty when it is sound. */
export function contractIssues(contract: unknown): string[] {
  if (!isObject(contract)) return ['a contract is an object'];
  const c = contract as Partial<Record<keyof DestinationContract, unknown>>;
  const issues: string[] = [];
  if (typeof c.name !== 'string' || !DESTINATION_NAME.test(c.name))
    issues.push(`name: 1–64 characters of a-z, 0-9, ".", "_", "-", starting with a letter or digit`);
  if (!(DEDUPE_MECHANISMS as readonly unknown[]).includes(c.mechanism))
    issues.push(`mechanism: one of ${DEDUPE_MECHANISMS.join(', ')}`);
  if (!(KEY_SCOPES as readonly unknown[]).includes(c.keyScope))
    issues.push(`keyScope: one of ${KEY_SCOPES.join(', ')}`);
  // A key the provider honours is honoured for a while: say how long, so a late retry is judged against it.
  if (
    c.mechanism === 'idempotency_key'
      ? !isWhole(c.keyRetentionSeconds, 1)
      : c.keyRetentionSeconds !== null && !isWhole(c.keyRetentionSeconds, 1)
  )
    issues.push(
      c.mechanism === 'idempotency_key'
        ? 'keyRetentionSeconds: how long the provider remembers a key, in whole seconds (≥ 1)'
        : 'keyRetentionSeconds: whole seconds (≥ 1), or null for none to declare',
    );
  if (!isWhole(c.callTimeoutMs, 1, MAX_CALL_TIMEOUT_MS))
    issues.push(`callTimeoutMs: whole milliseconds, 1 to ${MAX_CALL_TIMEOUT_MS}`);
  if (!isWhole(c.absenceGraceMs, 0)) issues.push('absenceGraceMs: whole milliseconds (≥ 0)');
  if (!isWhole(c.readbackMaxIntervalMs, 1)) issues.push('readbackMaxIntervalMs: whole milliseconds (≥ 1)');
  if (
    c.readbackRatePerSecond !== undefined &&
    !(
      typeof c.readbackRatePerSecond === 'number' &&
      c.readbackRatePerSecond >= MIN_READBACK_RATE_PER_SECOND &&
      c.readbackRatePerSecond <= 10_000
    )
  )
    issues.push(
      `readbackRatePerSecond: readback requests a second, at least ${MIN_READBACK_RATE_PER_SECOND} (a readback's next request waits at most 10 s for its turn: a slower rate never gets one, and the readback retries for good) and at most 10000 (or leave it out)`,
    );
  if (typeof c.retryAfterProvenAbsence !== 'boolean') issues.push('retryAfterProvenAbsence: true or false');
  if (!isObject(c.operations) || Object.keys(c.operations).length === 0)
    issues.push('operations: at least one operation, each a payload schema (a zod schema is one)');
  else
    for (const [operation, schema] of Object.entries(c.operations)) {
      if (operation.length < 1 || operation.length > 64)
        issues.push(`operations: "${operation}" is not 1–64 characters`);
      if (!isObject(schema) || typeof schema.safeParse !== 'function')
        issues.push(`operations.${operation}: a payload schema with safeParse (a zod schema is one)`);
    }
  if (c.steps !== undefined) {
    if (!isObject(c.steps)) issues.push('steps: an object of operation → plan function');
    else
      for (const [operation, plan] of Object.entries(c.steps)) {
        if (typeof plan !== 'function') issues.push(`steps.${operation}: a function from the payload to its steps`);
        if (!isObject(c.operations) || !Object.hasOwn(c.operations, operation))
          issues.push(`steps.${operation}: not one of the operations`);
      }
  }
  if (typeof c.buildPackage !== 'function')
    issues.push('buildPackage: a function (effect ID, operation, payload) → package');
  if (typeof c.describe !== 'function') issues.push('describe: a function (operation, payload) → a few words');
  return issues;
}

/** Checks a contract and returns it; throws DestinationDefinitionError with every issue found. */
export function defineContract<C extends DestinationContract>(contract: C): C {
  const issues = contractIssues(contract);
  if (issues.length) throw new DestinationDefinitionError(nameOf(contract), issues);
  return contract;
}

function nameOf(value: unknown): string {
  const name = isObject(value) ? value.name : undefined;
  return typeof name === 'string' && name ? JSON.stringify(name) : '(unnamed)';
}

const CONNECTION_FUNCTIONS = ['send', 'readBack', 'lookup', 'resolveUrl'] as const;

export interface DestinationDefinition {
  contract: DestinationContract;
  /**
   * The connection this worker makes, from its environment and the destination's credential; undefined
   * when the worker is not configured for it. Runs once, when the worker starts. A connection that keeps
   * something open (a client's socket, a pool) returns `close()` too: the worker calls it once it has stopped.
   */
  connect(context: DestinationContext): DestinationConnection | undefined;
}

/**
 * A destination: its checked contract, and `connect` returning the adapter a worker hosts (the contract's
 * fields with the connection's calls). A connection missing a call is refused when it is made.
 */
export function defineDestination(definition: DestinationDefinition): Destination {
  if (!isObject(definition) || typeof definition.connect !== 'function')
    throw new DestinationDefinitionError(nameOf(isObject(definition) ? definition.contract : undefined), [
      'connect: a function (context) → connection, or undefined when this worker is not configured for it',
    ]);
  const contract = defineContract(definition.contract);
  return {
    contract,
    connect(context) {
      const connection = definition.connect(context);
      if (connection === undefined) return undefined;
      const issues = [
        ...CONNECTION_FUNCTIONS.filter(
          (f) => typeof (connection as Partial<DestinationConnection>)?.[f] !== 'function',
        ).map((f) => `connect() returned no ${f} function`),
        ...(typeof connection?.objectUrlShape === 'string' ? [] : ['connect() returned no objectUrlShape text']),
        ...(connection?.close === undefined || typeof connection.close === 'function'
          ? []
          : ['connect() returned a close that is not a function']),
      ];
      if (issues.length) throw new DestinationDefinitionError(JSON.stringify(contract.name), issues);
      // The contract is what approvals were validated against: the connection cannot redefine it.
      return { ...connection, ...contract };
    },
  };
}

/** Ends what an adapter keeps open (its optional close()); a close that fails is reported, never thrown. */
export async function closeAdapter(adapter: DestinationAdapter): Promise<string | undefined> {
  if (typeof adapter.close !== 'function') return undefined;
  try {
    await adapter.close();
    return undefined;
  } catch (error) {
    return `${adapter.name}: ${error instanceof Error ? error.message : String(error)}`;
  }
}

export function isDestination(value: unknown): value is Destination {
  return isObject(value) && isObject(value.contract) && typeof value.connect === 'function';
}

export function contractOf(known: KnownDestination): DestinationContract {
  return isDestination(known) ? known.contract : known;
}

/**
 * The catalog of what approvals may name, from destinations or bare contracts: every contract checked,
 * every name once. Throws DestinationDefinitionError otherwise.
 */
export function catalogOf(known: readonly KnownDestination[]): DestinationCatalog {
  const catalog: Record<string, DestinationContract> = {};
  for (const entry of known) {
    const contract = defineContract(contractOf(entry));
    if (Object.hasOwn(catalog, contract.name))
      throw new DestinationDefinitionError(JSON.stringify(contract.name), [
        'defined twice: every name names one destination',
      ]);
    catalog[contract.name] = contract;
  }
  return Object.freeze(catalog);
}

/** The contract a name names, own properties only ("constructor" names no destination). */
export function contractIn(catalog: DestinationCatalog, name: string): DestinationContract | undefined {
  return Object.hasOwn(catalog, name) ? catalog[name] : undefined;
}
