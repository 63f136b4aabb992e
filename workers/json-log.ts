// The worker's log: one JSON object per line on stdout, for the SDK's lines (worker state, activity and
// workflow failures, Core's own forwarded logs) and ours alike. A line about an effect carries its
// effectId (the effect workflow's ID is the effect ID). Payloads and credentials never reach a line: our
// code logs neither, and fields whose names say they might hold one are redacted on the way out.
import { DefaultLogger, type LogEntry, type LogLevel } from '@temporalio/worker';
import { EFFECT_WORKFLOW_TYPE } from '../workflows/contract.js';

const SECRET_FIELD = /payload|body|secret|password|passwd|token|api_?key|authorization|credential|cookie|private/i;

function redacted(value: unknown, depth = 0): unknown {
  if (value instanceof Error) return { name: value.name, message: value.message };
  if (typeof value === 'bigint') return value.toString();
  if (value === null || typeof value !== 'object' || depth > 4) return value;
  if (Array.isArray(value)) return value.map((v) => redacted(v, depth + 1));
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [k, SECRET_FIELD.test(k) ? '[redacted]' : redacted(v, depth + 1)]),
  );
}

/** The JSON line for one log entry (exported for the test of its rules). */
export function jsonLine({ level, message, meta = {}, timestampNanos }: LogEntry): string {
  const effectId =
    meta.effectId ?? (meta.workflowType === EFFECT_WORKFLOW_TYPE ? (meta.workflowId as string | undefined) : undefined);
  return JSON.stringify({
    time: new Date(Number(timestampNanos / 1_000_000n)).toISOString(),
    level: level.toLowerCase(),
    msg: message,
    ...(effectId !== undefined ? { effectId } : {}),
    ...(redacted(meta) as object),
  });
}

/** The Runtime's logger: JSON lines at `level` and above (EFFECT_LEDGER_LOG_LEVEL, default INFO). */
export function jsonLogger(level: LogLevel = 'INFO', write = (line: string) => process.stdout.write(`${line}\n`)) {
  return new DefaultLogger(level, (entry) => write(jsonLine(entry)));
}
