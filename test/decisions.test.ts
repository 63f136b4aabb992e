// Decision payloads as an operator types them in the Web UI: what is accepted, and why the rest is not.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseDecision } from '../domain/decisions.js';

describe('decision payloads', () => {
  test('accepts the documented payloads, trimmed', () => {
    assert.deepEqual(parseDecision('approve-retry', { actor: ' ops@example.com ', reason: 'checked' }), {
      ok: true,
      decision: { kind: 'approve-retry', actor: 'ops@example.com', reason: 'checked' },
    });
    assert.deepEqual(
      parseDecision('confirm-delivery', { actor: 'a', reason: 'b', externalUrl: 'https://x.example/p/1' }),
      {
        ok: true,
        decision: { kind: 'confirm-delivery', actor: 'a', reason: 'b', externalUrl: 'https://x.example/p/1' },
      },
    );
    assert.equal(parseDecision('abandon', { actor: 'a', reason: 'b' }).ok, true);
    assert.deepEqual(parseDecision('abandon', { actor: 'a', reason: 'b', checkedAbsent: true }), {
      ok: true,
      decision: { kind: 'abandon', actor: 'a', reason: 'b', checkedAbsent: true },
    });
  });

  const refusals: Array<[string, unknown, unknown, RegExp]> = [
    ['an unknown decision', 'approve', { actor: 'a', reason: 'b' }, /unknown decision "approve"/],
    ['a string payload', 'approve-retry', 'yes', /one JSON object/],
    ['an array payload', 'abandon', [{ actor: 'a' }], /one JSON object/],
    ['null', 'abandon', null, /one JSON object/],
    ['a missing actor', 'approve-retry', { reason: 'b' }, /actor is required/],
    ['an empty actor', 'approve-retry', { actor: '  ', reason: 'b' }, /actor must not be empty/],
    ['a numeric actor', 'approve-retry', { actor: 7, reason: 'b' }, /actor must be a string, got number/],
    ['a missing reason', 'abandon', { actor: 'a' }, /reason is required/],
    ['an unknown field', 'abandon', { actor: 'a', reason: 'b', force: true }, /unknown field\(s\) force/],
    ['a confirm without evidence', 'confirm-delivery', { actor: 'a', reason: 'b' }, /needs evidence/],
    [
      'a confirm with a non-URL',
      'confirm-delivery',
      { actor: 'a', reason: 'b', externalUrl: 'post 5' },
      /http\(s\) URL/,
    ],
    ['evidence on a retry', 'approve-retry', { actor: 'a', reason: 'b', externalId: 'x' }, /unknown field/],
    [
      'checkedAbsent as text',
      'abandon',
      { actor: 'a', reason: 'b', checkedAbsent: 'yes' },
      /checkedAbsent must be true/,
    ],
    ['checkedAbsent false', 'abandon', { actor: 'a', reason: 'b', checkedAbsent: false }, /checkedAbsent must be true/],
    ['checkedAbsent on a retry', 'approve-retry', { actor: 'a', reason: 'b', checkedAbsent: true }, /unknown field/],
  ];
  for (const [name, kind, payload, message] of refusals) {
    test(`refuses ${name}`, () => {
      const parsed = parseDecision(kind, payload);
      assert.equal(parsed.ok, false);
      assert.match((parsed as { error: string }).error, message);
    });
  }
});
