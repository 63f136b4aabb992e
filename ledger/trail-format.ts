// An effect's ledger trail as a few lines an operator can read in a terminal.
import { MAIN_STEP } from '../domain/idempotency-key.js';
import type { EffectTrail } from './trail.js';

export function formatTrail(trail: EffectTrail): string {
  const { effect } = trail;
  const lines = [
    `${effect.effectId}  [${effect.stage}]  ${effect.destination} ${effect.operation}: ${effect.summary}`,
    `  approved by ${effect.approvedBy} under ${effect.authorizationRef} at ${effect.approvedAt.toISOString()} (fingerprint ${effect.fingerprint.slice(0, 12)}…, ${effect.mechanism})`,
  ];
  for (const r of trail.revisions)
    lines.push(
      `  revision ${r.revision} by ${r.approvedBy} under ${r.authorizationRef} at ${r.approvedAt.toISOString()}: ${r.reason} (fingerprint ${r.fingerprint.slice(0, 12)}…)`,
    );
  const multiStep = trail.releases.some((r) => r.step !== MAIN_STEP);
  const step = (name: string) => (multiStep ? ` step ${name}` : '');
  for (const r of trail.releases)
    lines.push(
      `  release #${r.revision}${step(r.step)}: ${multiStep ? `${r.destination} ` : ''}${r.target} key=${r.idempotencyKey} body ${r.bodySha256.slice(0, 12)}… by ${r.releasedBy}`,
    );
  for (const a of trail.attempts) {
    const answer = trail.evidence.find((e) => e.attemptId === a.attemptId && e.kind === 'response');
    lines.push(
      `  attempt ${a.attemptNumber}${a.releaseRevision > 1 ? ` of revision ${a.releaseRevision}` : ''}${step(a.step)} key=${a.idempotencyKey} started ${a.startedAt.toISOString()} → ${answer ? `${answer.outcome}${answer.httpStatus ? ` (HTTP ${answer.httpStatus})` : ''}` : 'no answer recorded'}`,
    );
  }
  for (const e of trail.evidence.filter((x) => x.kind !== 'response'))
    lines.push(`  ${e.kind}${step(e.step)}: ${e.outcome}${e.coverage ? ` (${e.coverage} coverage)` : ''}`);
  for (const d of trail.decisions)
    lines.push(
      `  decision ${d.kind} by ${d.actor}: ${d.accepted ? 'accepted' : `rejected (${d.rejectionReason})`} — ${d.reason}`,
    );
  for (const f of trail.facts)
    lines.push(
      `  fact${step(f.step)}: ${f.externalId} ${f.externalUrl ?? ''} confirmed by ${f.confirmedBy} at ${f.occurredAt.toISOString()}`,
    );
  if (!trail.facts.length) lines.push('  fact: none');
  if (multiStep && trail.waitingOnStep) lines.push(`  waiting on step ${trail.waitingOnStep}`);
  return lines.join('\n');
}
