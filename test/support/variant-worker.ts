// Test-only: a worker process whose destinations are deliberately broken, so the chaos checker can be shown
// to bite. The real adapters are wrapped, never edited. CHAOS_VARIANT selects the break:
//   key-from-run      the keyed API's Idempotency-Key is the Temporal run ID (a new run = a new key)
//   key-from-attempt  the key carries the attempt (the activity's ID): every retry gets a fresh key
//   title-readback    readback trusts a title: the first object whose title (or text) matches is "ours"
//   no-fresh-readback the real adapters, but the workflow bundled with one line changed: a retry (human or
//                     automatic) leaves at once, without the fresh readback and the in-flight wait before it
import { fileURLToPath } from 'node:url';
import { Context } from '@temporalio/activity';
import { createDestinations } from '../../activities/destinations/registry.js';
import { resolveTemporalTarget } from '../../client/temporal-connection.js';
import type { DestinationAdapter, ReadbackResult } from '../../domain/destination-contract.js';
import { databaseUrl, openLedger } from '../../ledger/db.js';
import { providerUrl } from '../../workers/config.js';
import { bundleEffectWorkflows, createEffectWorker } from '../../workers/effect-worker.js';
import { connectWorkerNative } from '../../workers/temporal-worker-connection.js';

export const VARIANTS = ['key-from-run', 'key-from-attempt', 'title-readback', 'no-fresh-readback'] as const;
export type Variant = (typeof VARIANTS)[number];

function brokenKey(adapter: DestinationAdapter, variant: 'key-from-run' | 'key-from-attempt'): DestinationAdapter {
  return {
    ...adapter,
    send(request) {
      const info = Context.current().info;
      const idempotencyKey =
        variant === 'key-from-run'
          ? (info.workflowExecution?.runId ?? 'no-run')
          : `${request.effectId}.attempt-${info.activityId}`;
      return adapter.send({ ...request, idempotencyKey });
    },
  };
}

interface Listed {
  id: string;
  created_at: string;
  request?: Record<string, unknown>;
  text?: string;
}

function titleReadback(adapter: DestinationAdapter, baseUrl: string, listPath: string): DestinationAdapter {
  return {
    ...adapter,
    async readBack(request): Promise<ReadbackResult> {
      const title = request.package.body.title ?? request.package.body.text;
      const response = await fetch(`${baseUrl}${listPath}`);
      if (!response.ok) throw new Error(`GET ${listPath} answered ${response.status}`);
      const { data } = (await response.json()) as { data: Listed[] };
      const match = data.find((o) => (o.request?.title ?? o.request?.text ?? o.text) === title);
      if (!match)
        return {
          outcome: 'absent',
          coverage: 'complete',
          detail: { method: 'title', reason: 'no object with this title' },
        };
      return {
        outcome: 'found',
        coverage: 'complete',
        externalId: match.id,
        occurredAt: match.created_at,
        detail: { method: 'title', reason: 'an object with the same title' },
      };
    },
  };
}

const variant = process.env.CHAOS_VARIANT as Variant;
if (!VARIANTS.includes(variant)) throw new Error(`CHAOS_VARIANT must be one of ${VARIANTS.join(', ')}`);
const base = providerUrl();
const real = createDestinations({ providerUrl: base });
const keyed = real['keyed-api'];
const social = real['social-feed'];
if (!keyed || !social) throw new Error('the registry lacks keyed-api or social-feed');
const destinations =
  variant === 'title-readback'
    ? {
        'keyed-api': titleReadback(keyed, base, '/v1/objects?limit=100'),
        'social-feed': titleReadback(social, base, '/social/v1/posts?page_size=50'),
      }
    : variant === 'no-fresh-readback'
      ? real
      : { 'keyed-api': brokenKey(keyed, variant), 'social-feed': social };

/** The workflow with the fresh readback before a retry cut out, at bundle time (the loader says how). */
async function bundleWithoutFreshReadback() {
  const loader = fileURLToPath(new URL('./skip-fresh-readback-loader.cjs', import.meta.url));
  return bundleEffectWorkflows({
    webpackConfigHook: (config) => {
      config.module?.rules?.push({ test: /workflows[\\/]reconcile\.ts$/, enforce: 'pre', use: [{ loader }] });
      return config;
    },
  });
}

const config = resolveTemporalTarget();
const ledger = openLedger(databaseUrl());
const connection = await connectWorkerNative(config);
try {
  const worker = await createEffectWorker({
    connection,
    namespace: config.namespace,
    taskQueue: config.taskQueue,
    db: ledger.db,
    destinations,
    ...(variant === 'no-fresh-readback' ? { workflowBundle: await bundleWithoutFreshReadback() } : {}),
  });
  await worker.run();
} finally {
  await connection.close();
  await ledger.close();
}
