// A retry a person approves on the key-less feed while the post may already exist (seed 2026120402: the
// approve-retry came while the post was held, the fresh look was inconclusive, and the retry made a second post).
// Nothing at the feed dedupes a second POST, so a retry may leave only over a look that proves absence.
// `keyless-abandon`: the person abandons instead (seed 2026120603: the abandon was taken over an inconclusive look,
// beside the post); an abandon over a look that could not tell needs the person's word that the post is not there.
// `crowded`: the post is made at once, others post 100 times at once after it (the simulator's `crowd`), and its
// answer is held past the call timeout: every look is inconclusive (ours is out of the listed newest 100).
// Otherwise the post lands `commitAfterMs` after the timeout. The operator approves a retry the moment a person is asked; once asked
// again, one who finds the post on the feed confirms it, and one who does not abandons, saying so.
import { bump, type Model, mayUse, newEffect, type Real, Step, use } from './commands.js';
import { asksPerson, confirmFromDashboard, lookAt, OPERATOR, sendDecision } from './operator.js';
import { whenAsked } from './operators.js';

/** The answer is held past the chaos client's 2 s call timeout. */
const HOLD_MS = 6_000;

export class KeylessRetry extends Step {
  constructor(
    readonly crowded: boolean,
    readonly commitAfterMs: number,
    /** What the person sends the moment they are asked. */
    readonly first: 'approve-retry' | 'abandon' = 'approve-retry',
  ) {
    super();
  }
  get group() {
    return this.first === 'abandon' ? 'keyless-abandon' : 'keyless-retry';
  }
  override check(m: Readonly<Model>) {
    return m.effects.length < m.limits.effects && mayUse(m, this.group);
  }
  async run(m: Model, r: Real) {
    use(m, this.group);
    const { effectId, request } = newEffect(m, r, 'post', 'Launch post');
    bump(r, 'approvals');
    bump(
      r,
      this.first === 'abandon'
        ? 'abandons sent on the key-less feed while the post may exist'
        : 'retries approved on the key-less feed while the post may exist',
    );
    // Crowded: others post 100 times right after ours is stored, before any answer, so the first look (which
    // follows the call's timeout) cannot see it, however loaded the machine.
    await r.stack.simulator.fault(
      this.crowded ? 'delay_after_commit' : 'delay_before_commit',
      this.crowded
        ? { path: '/social/v1/posts', delayMs: HOLD_MS, crowd: 100 }
        : { path: '/social/v1/posts', delayMs: r.stack.options.callTimeoutMs + this.commitAfterMs },
    );
    // Crowded, the post is made at once: a short in-flight window (the stack's short grace) reaches the same path
    // without waiting out the feed's minute. A late post needs the feed's own window.
    const client = this.crowded ? r.stack.effectsShortGrace : r.stack.effects;
    try {
      await client.approve(request);
    } catch (error) {
      r.notes.push(`approve ${effectId} failed: ${(error as Error).message}`);
      return;
    }
    r.touch(effectId, `approved; ${this}`);
    const asked = () => asksPerson(r, effectId);
    const decide = async () => {
      if (!(await whenAsked(r, effectId, asked, { who: `${this}, first decision`, everyMs: 50 }))) return;
      const seen = await lookAt(r, effectId);
      await sendDecision(
        r,
        effectId,
        this.first,
        {
          actor: OPERATOR,
          reason:
            this.first === 'abandon'
              ? 'nothing on the dashboard yet; drop it'
              : 'nothing on the dashboard yet; send it again',
        },
        { via: 'update', seen },
      );
      if (!(await whenAsked(r, effectId, asked, { who: `${this}, second decision` }))) return;
      await confirmFromDashboard(r, effectId, 'found on the feed', { elseAbandon: true });
    };
    r.track(decide());
  }
  toString() {
    return this.crowded
      ? `${this.group}(answer held ${HOLD_MS} ms, the feed crowded before the first look)`
      : `${this.group}(the post lands ${this.commitAfterMs} ms after the timeout)`;
  }
}
