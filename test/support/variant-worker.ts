// Test-only: a worker process whose destinations are deliberately broken, so the chaos checker can be shown
// to bite. The real adapters are wrapped, never edited. CHAOS_VARIANT selects the break:
//   key-from-run      the keyed API's Idempotency-Key is the Temporal run ID (a new run = a new key)
//   key-from-attempt  the key carries the attempt (the activity's ID): every retry gets a fresh key
//   title-readback    readback trusts a title: the first object whose title (or text) matches is "ours"
//   no-fresh-readback the real adapters, but the workflow bundled with one line changed: a retry (human or
//                     automatic) leaves at once, without the fresh readback and the in-flight wait before it
//   cuts              the real worker (every destination configured as workers/main.ts does, the ledger
//                     reconciler hosted), with the cuts CHAOS_CUTS names planted: a workflow file's at bundle
//                     time (cut-loader.cjs), any other file's as Node loads it (cut-hooks.mjs) — test/support/cuts.ts
import { fileURLToPath } from 'node:url';
import { Context } from '@temporalio/activity';
import { createDestinations } from '../../activities/destinations/registry.js';
import { closeTemporalClient } from '../../client/connection-close.js';
import { EffectLedgerClient } from '../../client/effect-ledger-client.js';
import { connectTemporalClient, resolveTemporalTarget } from '../../client/temporal-connection.js';
import type { DestinationAdapter, ReadbackResult } from '../../domain/destination-contract.js';
import { databaseUrl, openLedger } from '../../ledger/db.js';
import { destinationSettings, providerUrl } from '../../workers/config.js';
import { buildIdOf, deploymentFromEnv, requireDeployment } from '../../workers/deployment.js';
import { bundleEffectWorkflows, createEffectWorker } from '../../workers/effect-worker.js';
import { ensureReconcilerSchedule } from '../../workers/ledger-reconciler.js';
import { connectWorkerNative } from '../../workers/temporal-worker-connection.js';
import { CUTS_ENV, type Cut } from './cuts.js';

export const VARIANTS = ['key-from-run', 'key-from-attempt', 'title-readback', 'no-fresh-readback', 'cuts'] as const;
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
      : variant === 'cuts'
        ? createDestinations(destinationSettings())
        : { 'keyed-api': brokenKey(keyed, variant), 'social-feed': social };

/** no-fresh-readback: a retry (human or automatic) leaves at once, without the fresh readback before it. */
const NO_FRESH_READBACK: Cut = {
  file: 'workflows/decisions.ts',
  find: 'const latest = await freshLookBeforeRetry(run);',
  replace: 'return RETRY; const latest = await freshLookBeforeRetry(run);',
};

/** The workflow bundled with the cuts of workflow files applied (test/support/cut-loader.cjs). */
async function bundleWithCuts(cuts: Cut[]) {
  const loader = fileURLToPath(new URL('./cut-loader.cjs', import.meta.url));
  const files = cuts.filter((c) => c.file.startsWith('workflows/'));
  return bundleEffectWorkflows({
    webpackConfigHook: (config) => {
      for (const file of new Set(files.map((c) => c.file)))
        config.module?.rules?.push({
          test: (resource: string) => resource.endsWith(file),
          enforce: 'pre',
          use: [{ loader, options: { cuts: files } }],
        });
      return config;
    },
  });
}

const cuts: Cut[] =
  variant === 'no-fresh-readback'
    ? [NO_FRESH_READBACK]
    : variant === 'cuts'
      ? (JSON.parse(process.env[CUTS_ENV] ?? '[]') as Cut[])
      : [];
const config = resolveTemporalTarget();
const ledger = openLedger(databaseUrl());
const connection = await connectWorkerNative(config);
// The cuts variant is the whole worker: the ledger reconciler too, as workers/main.ts hosts it.
const client = variant === 'cuts' ? await connectTemporalClient(config) : undefined;
try {
  const pageSize = process.env.EFFECT_LEDGER_RECONCILE_PAGE_SIZE;
  const effects =
    client &&
    new EffectLedgerClient({
      client,
      db: ledger.db,
      taskQueue: config.taskQueue,
      ...(pageSize ? { reconcilerPageSize: Number(pageSize) } : {}),
    });
  const everyMs = Number(process.env.EFFECT_LEDGER_RECONCILE_EVERY_MS ?? 60_000);
  if (client)
    await ensureReconcilerSchedule(client, {
      taskQueue: config.taskQueue,
      everyMs,
      olderThanMs: Math.min(30_000, everyMs),
    });
  const cutBundle = cuts.some((c) => c.file.startsWith('workflows/')) ? await bundleWithCuts(cuts) : undefined;
  const worker = await createEffectWorker({
    connection,
    namespace: config.namespace,
    taskQueue: config.taskQueue,
    db: ledger.db,
    destinations,
    ...(effects ? { effects } : {}),
    // Cut workflow code is a build of its own: it never takes the effects another build started.
    ...(cutBundle
      ? {
          workflowBundle: cutBundle,
          deployment: { ...requireDeployment(deploymentFromEnv()), buildId: buildIdOf(cutBundle.code) },
        }
      : {}),
  });
  const pass =
    effects &&
    setInterval(() => {
      effects.resumeStranded({ olderThanMs: Math.min(30_000, everyMs) }).catch(() => {});
    }, everyMs);
  pass?.unref();
  await worker.run();
  if (pass) clearInterval(pass);
} finally {
  await Promise.allSettled([connection.close(), client && closeTemporalClient(client)]);
  await ledger.close();
}
