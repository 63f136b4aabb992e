// An operator resetting what they see in the Web UI or with the CLI: `temporal workflow reset` of an effect's
// run (to its first or its last workflow task: the new run replays from there, its signals and updates
// reapplied), and `temporal activity reset` of the send activity (its attempts and timeout start over).
import { bump, type Model, mayUse, pick, type Real, Step, use } from './commands.js';

export type ResetKind = 'FirstWorkflowTask' | 'LastWorkflowTask' | 'send-activity';

const OPEN_STAGES = ['unknown', 'attempted', 'released', 'reconciled'] as const;

export class OperatorReset extends Step {
  constructor(
    readonly kind: ResetKind,
    readonly index: number,
  ) {
    super();
  }
  override check(m: Readonly<Model>) {
    return m.effects.some((e) => e.origin === 'approved') && mayUse(m, 'reset');
  }
  async run(m: Model, r: Real) {
    use(m, 'reset');
    const ours = new Map(m.effects.filter((e) => e.origin === 'approved').map((e) => [e.effectId, e]));
    const open: string[] = [];
    for (const stage of OPEN_STAGES)
      for (const e of await r.stack.effects.listByStage(stage, 1000)) if (ours.has(e.effectId)) open.push(e.effectId);
    const effectId = pick(open.sort(), this.index);
    if (!effectId) {
      bump(r, 'resets skipped (no open effect)');
      return;
    }
    const args =
      this.kind === 'send-activity'
        ? ['activity', 'reset', '--workflow-id', effectId, '--activity-type', 'attemptOnce']
        : ['workflow', 'reset', '--workflow-id', effectId, '--type', this.kind, '--reason', 'chaos: operator reset'];
    const { ok, output } = await r.stack.temporalCli(args);
    const what =
      this.kind === 'send-activity' ? 'temporal activity reset (send)' : `temporal workflow reset --type ${this.kind}`;
    if (!ok) {
      bump(r, `resets refused by the server (${this.kind})`);
      r.notes.push(`${what} of ${effectId}: ${output.split('\n').at(-1)?.slice(0, 200)}`);
      return;
    }
    const effect = ours.get(effectId);
    if (effect) effect.resets = (effect.resets ?? 0) + 1;
    bump(r, `resets (${this.kind})`);
    r.touch(effectId, what);
    r.log(`operator: ${what} of ${effectId}`);
  }
  toString() {
    return `operator-reset(${this.kind}, #${this.index})`;
  }
}
