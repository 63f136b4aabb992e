import { startStack } from '../harness/local-stack.js';
import { taskRequest } from '../harness/sample-requests.js';
const stack = await startStack({ purpose: 'profile' });
const N = 200, C = 20;
const approveMs: number[] = [], totalMs: number[] = [];
await stack.withWorker(async () => {
  let next = 0;
  await Promise.all(Array.from({ length: C }, async () => {
    while (next < N) {
      const i = next++;
      const t0 = performance.now();
      await stack.effects.approve(taskRequest(`p:${i}`, `r-${i}`));
      const t1 = performance.now();
      await stack.effects.result(`p:${i}`);
      approveMs.push(t1 - t0); totalMs.push(performance.now() - t0);
    }
  }));
});
const phases: Record<string, number[]> = {};
const add = (k: string, v: number) => (phases[k] ??= []).push(v);
for (let i = 0; i < N; i += 5) {
  const h = await stack.env.client.workflow.getHandle(`p:${i}`).fetchHistory();
  const t = (e: any) => Number(e.eventTime.seconds) * 1000 + e.eventTime.nanos / 1e6;
  const ev = h.events!;
  const attr: Record<string, string> = { WORKFLOW_TASK_STARTED: 'workflowTaskStartedEventAttributes', WORKFLOW_TASK_COMPLETED: 'workflowTaskCompletedEventAttributes', ACTIVITY_TASK_SCHEDULED: 'activityTaskScheduledEventAttributes', ACTIVITY_TASK_STARTED: 'activityTaskStartedEventAttributes', ACTIVITY_TASK_COMPLETED: 'activityTaskCompletedEventAttributes' };
  const find = (type: string, from = 0) => ev.findIndex((e: any, j) => j >= from && e[attr[type]!]);
  const start = t(ev[0]);
  const wft1s = find('WORKFLOW_TASK_STARTED'); const wft1c = find('WORKFLOW_TASK_COMPLETED');
  const as = find('ACTIVITY_TASK_STARTED'); const ac = find('ACTIVITY_TASK_COMPLETED');
  const wft2s = find('WORKFLOW_TASK_STARTED', ac); const done = ev.length - 1;
  add('start→wft1 started', t(ev[wft1s]) - start);
  add('wft1 started→completed', t(ev[wft1c]) - t(ev[wft1s]));
  add('activity scheduled→started', t(ev[as]) - t(ev[find('ACTIVITY_TASK_SCHEDULED')]));
  add('activity started→completed', t(ev[ac]) - t(ev[as]));
  add('activity completed→wft2 started', t(ev[wft2s]) - t(ev[ac]));
  add('wft2 started→closed', t(ev[done]) - t(ev[wft2s]));
}
const med = (a: number[]) => a.sort((x, y) => x - y)[Math.floor(a.length / 2)]!.toFixed(0);
console.log('approve p50', med(approveMs), 'total p50', med(totalMs));
for (const [k, v] of Object.entries(phases)) console.log(k, med(v));
await stack.stop();
process.exit(0);
