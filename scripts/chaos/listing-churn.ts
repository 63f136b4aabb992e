// A listing that moves under a readback: others post on the key-less feed many times a second while one of our
// posts, its answer held past the call timeout, is read back by listing. The feed lists only its newest 100, 50
// a page, so ours soon drops out of view, and each readback's second page (its own turn, a tenth of a second
// after the first) sees a window that moved. The readback must never call that the listing's end: the checker
// holds every "absent" over complete coverage against the objects already there (run.ts, absent_beside_object).
// Once the feed is quiet, a person who finds the post on the feed confirms it, as readback no longer can.
import { bump, type Model, mayUse, newEffect, type Real, Step, use } from './commands.js';
import { confirmFromDashboard, lookAt } from './operator.js';
import { whenAsked } from './operators.js';

/** How long others keep posting, and how many they post each tenth of a second. */
const CHURN_MS = 20_000;
const POSTS_PER_TICK = 10;
/** The answer is held past the chaos client's 2 s call timeout: the post is made, the effect goes UNKNOWN. */
const HOLD_MS = 6_000;

export class FeedChurn extends Step {
  override check(m: Readonly<Model>) {
    return m.effects.length < m.limits.effects && mayUse(m, 'feed-churn');
  }
  async run(m: Model, r: Real) {
    use(m, 'feed-churn');
    const { effectId, request } = newEffect(m, r, 'post', 'Launch post');
    bump(r, 'posts read back while the feed churned');
    await r.stack.simulator.fault('delay_after_commit', { path: '/social/v1/posts', delayMs: HOLD_MS });
    // A short grace: readbacks that may say "absent" come within the churn.
    await r.stack.effectsShortGrace.approve(request).catch((error: Error) => {
      r.notes.push(`approve ${effectId} failed: ${error.message}`);
    });
    r.touch(effectId, `approved; its answer held ${HOLD_MS} ms while others post ${POSTS_PER_TICK * 10} a second`);
    const churn = async () => {
      const stopAt = Date.now() + CHURN_MS;
      while (Date.now() < stopAt) {
        await r.stack.simulator.crowdSocialFeed(POSTS_PER_TICK).catch(() => {});
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const asks = async () => (await lookAt(r, effectId)).live?.awaiting?.startsWith('a human decision') === true;
      if (!(await whenAsked(r, effectId, asks, { who: String(this) }))) return;
      await confirmFromDashboard(r, effectId, 'found on the feed, past what its listing shows');
    };
    r.track(churn());
  }
  toString() {
    return 'feed-churn';
  }
}
