#!/usr/bin/env node
// effect: the command-line face of the backend API.
//   effect approve [file|-]        approve the effect described by a JSON request (stdin by default)
//   effect status ID               the ledger trail and the workflow's live view
//   effect list --stage STAGE      effects in a stage (with the latest attempt's start and reason, and why the
//                                  reconciler cannot start one that has no workflow)
//   effect list --unstartable      effects the ledger reconciler cannot start, whatever their stage, and why
//   effect decide ID approve-retry|confirm|abandon --actor WHO --reason WHY [--external-id X] [--external-url U]
//                 [--step S] [--revision R] [--attempt N] [--decision-id ID]
//   effect decide --where QUERY --look-now|--approve-retry|--abandon --actor WHO --reason WHY [--save-plan F] [--yes]
//   effect decide --plan F --yes   in bulk: a dry run of every effect the query selects, then (--yes) each decision
//                 bound to what the dry run saw, reported per effect (scripts/bulk-decide.ts)
//   effect revise ID [file|-] --approved-by WHO --reason WHY [--authorization-ref REF]
//                 a person's new revision of a rejected effect: the file holds {"payload": {…}} (or the payload)
//   effect audit [--destination D] [--since T]   the ledger against each destination's records and Temporal
// Every command takes --json, and --destinations MODULES (default EFFECT_LEDGER_DESTINATIONS, else the built-ins):
// the destinations approvals and revisions are validated against. Exit codes: 0 ok, 2 invalid input, 3 conflict
// (or a revision refused), 4 not found, 5 decision not accepted (or no running workflow to take it), 6 audit
// findings, 1 other.
import { type Client, WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { SingleBar } from 'cli-progress';
import { Command, InvalidArgumentError } from 'commander';
import { builtInContracts } from '../activities/destinations/built-in-contracts.js';
import { closeTemporalClient } from '../client/connection-close.js';
import { DESTINATIONS_ENV, DestinationModuleError, loadDestinations } from '../client/destination-modules.js';
import { EffectLedgerClient } from '../client/effect-ledger-client.js';
import { validateEffectRequest } from '../client/effect-request.js';
import { connectTemporalClient, resolveTemporalTarget } from '../client/temporal-connection.js';
import { startTracing } from '../client/tracing.js';
import { isDecisionKind } from '../domain/decisions.js';
import { catalogOf, DestinationDefinitionError, type KnownDestination } from '../domain/destination.js';
import { EFFECT_STAGES, type EffectStage, isEffectStage } from '../domain/stages.js';
import { databaseUrl, type Ledger, openLedger } from '../ledger/db.js';
import {
  EffectConflictError,
  EffectNotFoundError,
  EffectNotRunningError,
  InvalidEffectRequestError,
  RevisionRefusedError,
} from '../ledger/errors.js';
import { formatTrail } from '../ledger/trail-format.js';
import { arriveAtBarrier, BARRIER_ENV } from '../stack/barrier.js';
import { destinationSettings, providerUrl } from '../workers/config.js';
import { audit, formatAudit } from './audit/audit.js';
import { destinationRecords, realDestinationRecords } from './audit/destination-records.js';
import { readRequestLog } from './audit/request-log.js';
import { temporalProbe } from './audit/workflow-probe.js';
import {
  BULK_ACTIONS,
  type BulkAction,
  type BulkPlan,
  formatOutcomes,
  formatPlan,
  planBulk,
  readPlan,
  sendBulk,
  writePlan,
} from './bulk-decide.js';
import { RequestFileError, readRequestFile } from './request-file.js';

export const EXIT = { ok: 0, failure: 1, invalid: 2, conflict: 3, notFound: 4, refused: 5, findings: 6 } as const;

interface Session {
  effects: EffectLedgerClient;
  client: Client;
  ledger: Ledger;
  close(): Promise<void>;
}

/** The destinations modules the command line or the environment names; the built-ins' contracts otherwise. */
let destinationsSetting: string | undefined;

function knownDestinations(): Promise<KnownDestination[]> {
  return loadDestinations(destinationsSetting ?? process.env[DESTINATIONS_ENV], builtInContracts);
}

async function openSession(): Promise<Session> {
  const destinations = await knownDestinations();
  const config = resolveTemporalTarget();
  // OTEL_* asking for traces: an approval or a decision from here is a span (docs/tracing.md), flushed at close.
  const tracing = await startTracing({ serviceName: 'effect-ledger-cli' });
  // Lazy: `list` and the ledger half of `status` answer while Temporal is unreachable.
  const client = await connectTemporalClient(config, { lazy: true });
  const ledger: Ledger = openLedger(databaseUrl(), { max: 2 });
  return {
    effects: new EffectLedgerClient({ client, db: ledger.db, taskQueue: config.taskQueue, destinations }),
    client,
    ledger,
    async close() {
      // Temporal first (connection-close.ts): a call it cancels may still read the ledger.
      await closeTemporalClient(client).catch(() => {});
      await ledger.close();
      await tracing?.shutdown().catch(() => {});
    },
  };
}

function print(json: boolean, value: unknown, text: () => string): void {
  process.stdout.write(json ? `${JSON.stringify(value, null, 2)}\n` : `${text()}\n`);
}

function parseTime(value: string): Date {
  const time = new Date(value);
  if (Number.isNaN(time.getTime())) throw new InvalidArgumentError('expected an ISO time, e.g. 2026-11-30T12:00:00Z');
  return time;
}

function positive(option: string, value: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 1) throw new InvalidArgumentError(`${option} takes 1, 2, …`);
  return n;
}

function parseStage(value: string): EffectStage {
  if (!isEffectStage(value)) throw new InvalidArgumentError(`stage must be one of ${EFFECT_STAGES.join(', ')}`);
  return value;
}

interface DecideOptions {
  actor?: string;
  reason?: string;
  externalId?: string;
  externalUrl?: string;
  checkedAbsent?: boolean;
  step?: string;
  revision?: number;
  attempt?: number;
  decisionId?: string;
  where?: string;
  lookNow?: boolean;
  approveRetry?: boolean;
  abandon?: boolean;
  savePlan?: string;
  plan?: string;
  yes?: boolean;
  concurrency?: number;
  json?: boolean;
}

/** `decide --where …` or `decide --plan …`: the dry run, then (with --yes) the decisions, reported per effect. */
async function decideInBulk(effectId: string | undefined, decision: string | undefined, opts: DecideOptions) {
  if (effectId || decision) throw new InvalidArgumentError('--where and --plan take no effect ID or decision');
  const actions = BULK_ACTIONS.filter(
    (a) => ({ 'look-now': opts.lookNow, 'approve-retry': opts.approveRetry, abandon: opts.abandon })[a],
  );
  await withSession(async ({ client, effects }) => {
    let plan: BulkPlan;
    if (opts.plan) {
      plan = readPlan(opts.plan);
    } else {
      if (actions.length !== 1)
        throw new InvalidArgumentError('--where takes exactly one of --look-now, --approve-retry, --abandon');
      if (!opts.actor || !opts.reason) throw new InvalidArgumentError('--where needs --actor and --reason');
      const looking = new SingleBar({ format: 'dry run  {value} effects read', stream: process.stderr });
      looking.start(0, 0);
      plan = await planBulk(
        client,
        { action: actions[0] as BulkAction, where: opts.where as string, actor: opts.actor, reason: opts.reason },
        (seen) => looking.update(seen),
      );
      looking.stop();
      if (opts.savePlan) writePlan(opts.savePlan, plan);
    }
    if (!opts.yes) {
      print(!!opts.json, plan, () => `${formatPlan(plan)}\n\ndry run: nothing sent; add --yes to send it`);
      return;
    }
    const bar = new SingleBar({ format: `${plan.action} [{bar}] {value}/{total}`, stream: process.stderr });
    bar.start(plan.effects.length, 0);
    const outcomes = await sendBulk(effects, plan, { concurrency: opts.concurrency ?? 8, progress: bar });
    bar.stop();
    print(!!opts.json, { plan, outcomes }, () => `${formatPlan(plan)}\n\n${formatOutcomes(outcomes)}`);
    if (outcomes.some((o) => o.result === 'refused' || o.result === 'failed')) process.exitCode = EXIT.refused;
  });
}

async function withSession(action: (session: Session) => Promise<void>): Promise<void> {
  const session = await openSession();
  try {
    await action(session);
  } finally {
    await session.close();
  }
}

export function buildProgram(): Command {
  // exitOverride before the subcommands exist, so they inherit it and bad arguments reach our exit codes.
  const program = new Command('effect')
    .description('Approve and inspect business effects carried by effect-ledger.')
    .option(
      '--destinations <modules>',
      `destinations modules (paths or packages, comma-separated; "built-in" for the shipped ones); default ${DESTINATIONS_ENV}, else the built-ins`,
    )
    .hook('preAction', (command) => {
      destinationsSetting = command.opts<{ destinations?: string }>().destinations;
    })
    .exitOverride();
  program
    .command('approve')
    .description('approve an effect from a JSON request file (or - / nothing for stdin)')
    .argument('[file]', 'request file', '-')
    .option('--json', 'print JSON')
    .action(async (file: string, opts: { json?: boolean }) => {
      // Validate before connecting anywhere: bad input changes nothing and needs no server.
      const request = readRequestFile(file);
      validateEffectRequest(request, catalogOf(await knownDestinations()));
      await withSession(async ({ effects }) => {
        // Test hook: contenders of a race test are let go together, connected and ready to approve.
        const barrier = process.env[BARRIER_ENV];
        if (barrier) await arriveAtBarrier(barrier);
        const result = await effects.approve(request);
        print(
          !!opts.json,
          result,
          () =>
            `${result.created ? 'approved' : 'already approved'}: ${result.effectId} [${result.stage}]${result.fact ? ` → ${result.fact.externalId}` : ''}`,
        );
      });
    });
  program
    .command('status')
    .description("an effect's ledger trail and its workflow's live view")
    .argument('<effectId>')
    .option('--json', 'print JSON')
    .action(async (effectId: string, opts: { json?: boolean }) => {
      await withSession(async ({ effects }) => {
        const report = await effects.status(effectId);
        print(
          !!opts.json,
          report,
          () =>
            formatTrail(report.trail) +
            (report.live?.awaiting ? `\n  awaiting: ${report.live.awaiting}` : '') +
            (report.retrying ?? [])
              .map(
                (r) =>
                  `\n  retrying: ${r.activity} (attempt ${r.attempt}${r.worker ? `, last on ${r.worker}` : ''}): ${r.lastFailure}`,
              )
              .join('') +
            (report.liveUnavailable ? `\n  (ledger only: ${report.liveUnavailable})` : ''),
        );
      });
    });
  program
    .command('list')
    .description('effects in a stage, most recently moved first; or (--unstartable) those the reconciler cannot start')
    .option('--stage <stage>', `one of ${EFFECT_STAGES.join(', ')}`, parseStage)
    .option('--unstartable', 'effects the ledger reconciler cannot start (no workflow runs them), longest first')
    .option('--limit <n>', 'at most this many', (v) => Number.parseInt(v, 10), 100)
    .option('--json', 'print JSON')
    .action(async (opts: { stage?: EffectStage; unstartable?: boolean; limit: number; json?: boolean }) => {
      if (!opts.stage === !opts.unstartable) throw new InvalidArgumentError('give --stage STAGE or --unstartable');
      await withSession(async ({ effects }) => {
        if (opts.unstartable) {
          const rows = await effects.listUnstartable(opts.limit);
          print(
            !!opts.json,
            rows,
            () =>
              rows
                .map(
                  (r) =>
                    `${r.effectId}\t${r.stage} since ${r.stageChangedAt.toISOString()}\tno workflow: could not start since ${r.firstFailedAt.toISOString()} (failed starts: ${r.failures})\t${r.destination} ${r.operation}: ${r.summary}\t${r.reason}`,
                )
                .join('\n') || '(no effects the reconciler cannot start)',
          );
          return;
        }
        const stage = opts.stage as EffectStage;
        const rows = await effects.listByStage(stage, opts.limit);
        print(
          !!opts.json,
          rows,
          () =>
            rows
              .map(
                (r) =>
                  `${r.effectId}\t${r.stage} since ${r.stageChangedAt.toISOString()}\tattempt started ${r.lastAttemptAt?.toISOString() ?? '-'}\t${r.destination} ${r.operation}: ${r.summary}\t${r.lastReason ?? ''}${
                    r.startFailure
                      ? `\tNO WORKFLOW: the reconciler could not start it since ${r.startFailure.since.toISOString()} (failed starts: ${r.startFailure.failures}): ${r.startFailure.reason}`
                      : ''
                  }`,
              )
              .join('\n') || `(no effects in ${stage})`,
        );
      });
    });
  program
    .command('decide')
    .description(
      'decide on an UNKNOWN effect (through the workflow update "decide"); or, with --where, on every effect a visibility query selects',
    )
    .argument('[effectId]')
    .argument('[decision]', 'approve-retry | confirm | abandon')
    .option('--actor <who>', 'who decides, e.g. an email')
    .option('--reason <why>', 'why')
    .option('--external-id <id>', 'confirm: the object at the destination')
    .option('--external-url <url>', 'confirm: its URL')
    .option('--step <step>', 'the step this answers (a multi-step effect): refused as stale once it settled')
    .option('--revision <n>', 'the revision this answers (a revised effect): refused as stale once it moved on', (v) =>
      positive('--revision', v),
    )
    .option('--attempt <n>', 'the attempt this answers: refused as stale if the effect has moved on', (v) =>
      positive('--attempt', v),
    )
    .option(
      '--checked-absent',
      'abandon: you saw at the destination that the object is not there (needed where the last look could not tell)',
    )
    .option('--decision-id <id>', 'names the decision: run again with the same ID (after a timeout), it counts once')
    .option(
      '--where <query>',
      'bulk: the running effects a visibility query selects, e.g. \'EffectDestination = "social-feed" AND EffectAwaiting = "person"\'; a dry run unless --yes',
    )
    .option('--look-now', 'bulk: look for each object now (the provider is back) instead of at the next scheduled look')
    .option('--approve-retry', 'bulk: approve a same-key retry of each (bound to the attempt the dry run saw)')
    .option('--abandon', 'bulk: abandon each (bound to the attempt the dry run saw)')
    .option('--save-plan <file>', 'bulk: write the dry run to a file, to send later with --plan')
    .option('--plan <file>', 'bulk: send a saved dry run, exactly as it was reviewed (with --yes)')
    .option('--yes', 'bulk: send after the dry run')
    .option('--concurrency <n>', 'bulk: decisions in flight at once (default 8)', (v) => positive('--concurrency', v))
    .option('--json', 'print JSON')
    .action(async (effectId: string | undefined, decision: string | undefined, opts: DecideOptions) => {
      if (opts.where !== undefined || opts.plan !== undefined) return decideInBulk(effectId, decision, opts);
      if (!effectId || !decision)
        throw new InvalidArgumentError('decide takes an effect ID and a decision, or --where');
      if (!opts.actor || !opts.reason) throw new InvalidArgumentError('decide needs --actor and --reason');
      const kind = decision === 'confirm' ? 'confirm-delivery' : decision;
      if (!isDecisionKind(kind))
        throw new InvalidArgumentError(
          `decision must be approve-retry, confirm or abandon, not ${JSON.stringify(decision)}`,
        );
      await withSession(async ({ effects }) => {
        const { externalId, externalUrl, checkedAbsent, actor, reason, step, revision, attempt, decisionId } = opts;
        const answer = await effects.decide(
          effectId,
          kind,
          {
            actor: actor as string,
            reason: reason as string,
            ...(externalId ? { externalId } : {}),
            ...(externalUrl ? { externalUrl } : {}),
            ...(checkedAbsent ? { checkedAbsent: true as const } : {}),
            ...(step ? { step } : {}),
            ...(revision ? { revision } : {}),
            ...(attempt ? { attempt } : {}),
          },
          decisionId,
        );
        print(
          !!opts.json,
          answer,
          () =>
            `${answer.repeated ? `${answer.reason}` : answer.accepted ? 'accepted' : `not accepted: ${answer.reason}`}; ${effectId} is ${answer.stage}`,
        );
        if (!answer.accepted) process.exitCode = EXIT.refused;
      });
    });
  program
    .command('revise')
    .description("a person's new revision of a rejected effect: same effect ID, new payload, release revision n+1")
    .argument('<effectId>')
    .argument('[file]', 'JSON file: {"payload": {…}} or the payload itself (- for stdin)', '-')
    .requiredOption('--approved-by <who>', 'the person approving this revision')
    .requiredOption('--reason <why>', 'why the refused revision is replaced')
    .option('--authorization-ref <ref>', "the authorization it is approved under (default: the effect's)")
    .option('--json', 'print JSON')
    .action(
      async (
        effectId: string,
        file: string,
        opts: { approvedBy: string; reason: string; authorizationRef?: string; json?: boolean },
      ) => {
        const raw = readRequestFile(file);
        const body = (raw && typeof raw === 'object' && 'payload' in raw ? raw : { payload: raw }) as Record<
          string,
          unknown
        >;
        await withSession(async ({ effects, ledger }) => {
          const [effect] = await ledger.sql<{ authorizationRef: string }[]>`
            SELECT authorization_ref AS "authorizationRef" FROM effects WHERE effect_id = ${effectId}`;
          if (!effect) throw new EffectNotFoundError(effectId);
          const result = await effects.revise(effectId, {
            ...body,
            payload: body.payload as Record<string, unknown>,
            approvedBy: opts.approvedBy,
            reason: opts.reason,
            authorizationRef: opts.authorizationRef ?? (body.authorizationRef as string) ?? effect.authorizationRef,
          });
          print(
            !!opts.json,
            result,
            () =>
              `${result.created ? 'revised' : 'already revised'}: ${result.effectId} revision ${result.revision} [${result.stage}]`,
          );
        });
      },
    );
  program
    .command('audit')
    .description(
      "check the ledger against each destination's own records and Temporal: duplicates, objects without a fact, facts whose object is gone or differs, keys not derived from the effect ID, stuck effects",
    )
    .option('--destination <name>', 'only this destination')
    .option('--since <time>', 'only effects approved at or after this ISO time', parseTime)
    .option('--grace <seconds>', 'do not call an effect stuck within this many seconds of its last move', Number, 60)
    .option('--provider-url <url>', 'where the destinations are read (default EFFECT_LEDGER_PROVIDER_URL)')
    .option('--json', 'print JSON')
    .action(
      async (opts: { destination?: string; since?: Date; grace: number; providerUrl?: string; json?: boolean }) => {
        await withSession(async ({ client, ledger }) => {
          const baseUrl = opts.providerUrl ?? providerUrl();
          const report = await audit(ledger.sql, {
            // The simulator's two, and the real destinations configured in this environment (EFFECT_LEDGER_*).
            destinations: [...destinationRecords(baseUrl), ...realDestinationRecords(destinationSettings())],
            workflows: temporalProbe(client),
            requestLog: await readRequestLog(baseUrl),
            ...(opts.destination ? { destination: opts.destination } : {}),
            ...(opts.since ? { since: opts.since } : {}),
            graceMs: opts.grace * 1000,
          });
          print(!!opts.json, report, () => formatAudit(report));
          if (report.findings.length) process.exitCode = EXIT.findings;
        });
      },
    );
  return program;
}

export function exitCodeFor(error: unknown): number {
  if (
    error instanceof InvalidEffectRequestError ||
    error instanceof RequestFileError ||
    error instanceof WorkflowUpdateFailedError ||
    error instanceof InvalidArgumentError ||
    error instanceof DestinationModuleError ||
    error instanceof DestinationDefinitionError
  )
    return EXIT.invalid;
  if (error instanceof WorkflowNotFoundError) return EXIT.notFound;
  if (error instanceof EffectConflictError || error instanceof RevisionRefusedError) return EXIT.conflict;
  if (error instanceof EffectNotFoundError) return EXIT.notFound;
  if (error instanceof EffectNotRunningError) return EXIT.refused;
  return EXIT.failure;
}

const program = buildProgram();
try {
  await program.parseAsync(process.argv);
} catch (error) {
  const code = (error as { code?: string }).code;
  if (typeof code === 'string' && code.startsWith('commander.')) {
    // Commander already printed its message; help and version are not errors.
    process.exitCode = code === 'commander.helpDisplayed' || code === 'commander.version' ? EXIT.ok : EXIT.invalid;
  } else {
    const exit = exitCodeFor(error);
    const name = (error as Error).name ?? 'Error';
    process.stderr.write(`${name}: ${(error as Error).message}\n`);
    if (process.argv.includes('--json'))
      process.stdout.write(
        `${JSON.stringify({ error: name, code: (error as { code?: unknown }).code, message: (error as Error).message })}\n`,
      );
    process.exitCode = exit;
  }
}
