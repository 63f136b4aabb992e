// The search attributes the effect workflow upserts must exist in the worker's namespace: without them each of its
// workflow tasks fails, and effects sit unmoved with the reason only in the Web UI. A worker refuses to start
// instead, naming what is missing and the command that creates it (docs/deploy.md).
import proto from '@temporalio/proto';
import type { NativeConnection } from '@temporalio/worker';
import {
  effectAwaitingKey,
  effectDestinationKey,
  effectOperationKey,
  effectStageKey,
  effectStepKey,
  effectSummaryKey,
} from '../workflows/search-attributes.js';

/** Every search attribute the effect workflow sets, each a Keyword (temporal.yaml lists the same). */
export const EFFECT_SEARCH_ATTRIBUTES: readonly string[] = [
  effectStageKey,
  effectDestinationKey,
  effectOperationKey,
  effectSummaryKey,
  effectStepKey,
  effectAwaitingKey,
].map((key) => key.name);

const KEYWORD = proto.temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD;

export class MissingSearchAttributesError extends Error {
  override readonly name = 'MissingSearchAttributesError';
  constructor(
    readonly namespace: string,
    /** Absent, or registered with another type. */
    readonly missing: readonly string[],
  ) {
    super(
      [
        `namespace ${namespace} lacks, as Keyword, the search attributes the effect workflow sets: ${missing.join(', ')} (its workflow tasks fail without them). Create them (docs/deploy.md), then start the worker again:`,
        ...missing.map(
          (name) =>
            `  temporal operator search-attribute create --namespace ${namespace} --name ${name} --type Keyword`,
        ),
      ].join('\n'),
    );
  }
}

/**
 * Throws MissingSearchAttributesError when the namespace lacks one of them or has it with another type. When the
 * server does not let this worker list them (an API key without that right, say), it tells `onUnchecked` why and
 * lets the worker start: the check is a kindness, not a gate.
 */
export async function requireSearchAttributes(
  connection: Pick<NativeConnection, 'operatorService'> | undefined,
  namespace: string,
  onUnchecked: (why: string) => void,
): Promise<void> {
  let registered: Record<string, unknown>;
  try {
    if (!connection) throw new Error('the worker has no connection of its own');
    const answer = await connection.operatorService.listSearchAttributes({ namespace });
    registered = { ...answer.systemAttributes, ...answer.customAttributes };
  } catch (error) {
    onUnchecked(error instanceof Error ? error.message : String(error));
    return;
  }
  const missing = EFFECT_SEARCH_ATTRIBUTES.filter((name) => registered[name] !== KEYWORD);
  if (missing.length) throw new MissingSearchAttributesError(namespace, missing);
}
