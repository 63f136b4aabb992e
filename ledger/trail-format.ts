// An effect's ledger trail as a few lines an operator can read in a terminal.
import type { EffectTrail } from './trail.js';

export function formatTrail(trail: EffectTrail): string {
  const { effect } = trail;
  const lines = [
    `${effect.effectId}  [${effect.stage}]  ${effect.destination} ${effect.operation}: ${effect.summary}`,
    `  approved by ${effect.approvedBy} under ${effect.authorizationRef} at ${effect.approvedAt.toISOString()} (fingerprint ${effect.fingerprint.slice(0, 12)}…, ${effect.mechanism})`,
  ];
  for (const r of trail.releases)
    lines.push(`  release #${r.revision}: ${r.target} body ${r.bodySha256.slice(0, 12)}… by ${r.releasedBy}`);
  for (const a of trail.attempts) {
    const answer = trail.evidence.find((e) => e.attemptId === a.attemptId && e.kind === 'response');
    lines.push(
      `  attempt ${a.attemptNumber} key=${a.idempotencyKey} started ${a.startedAt.toISOString()} → ${answer ? `${answer.outcome}${answer.httpStatus ? ` (HTTP ${answer.httpStatus})` : ''}` : 'no answer recorded'}`,
    );
  }
  for (const e of trail.evidence.filter((x) => x.kind !== 'response'))
    lines.push(`  ${e.kind}: ${e.outcome}${e.coverage ? ` (${e.coverage} coverage)` : ''}`);
  for (const d of trail.decisions)
    lines.push(
      `  decision ${d.kind} by ${d.actor}: ${d.accepted ? 'accepted' : `rejected (${d.rejectionReason})`} — ${d.reason}`,
    );
  lines.push(
    trail.fact
      ? `  fact: ${trail.fact.externalId} ${trail.fact.externalUrl ?? ''} confirmed by ${trail.fact.confirmedBy} at ${trail.fact.occurredAt.toISOString()}`
      : '  fact: none',
  );
  return lines.join('\n');
}
