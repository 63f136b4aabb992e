// Isolation between the tests of one file (they share one stack): after each test, the provider's fault
// queue must be empty (a fault the test did not consume would be handed to the next one), no workflow
// the test did not mean to leave open may still run, and the provider is put back to a fresh state
// (retention restored, objects, keys, held answers and its request log gone). A test depends on no
// other test's leftovers.
import { afterEach } from 'node:test';
import { openWorkflows } from '../../harness/effect-probes.js';
import type { Stack } from '../../harness/local-stack.js';
import { DEFAULT_KEY_RETENTION_MS } from '../../harness/simulator/server.js';

/** Every integration test gets this timeout, so a failure shows as a failure, not a hang. */
export const TEST_TIMEOUT = { timeout: 180_000 } as const;

/** Effect IDs the current test means to leave running (cleared after each test). */
export const leftOpenOnPurpose = new Set<string>();

export function isolateEachTest(stackOf: () => Stack | undefined): void {
  afterEach(async () => {
    const stack = stackOf();
    if (!stack) return;
    const problems: string[] = [];
    const faults = await stack.simulator.faults();
    await stack.simulator.clearFaults();
    if (faults.length > 0) problems.push(`the test left faults unconsumed: ${JSON.stringify(faults)}`);
    const open = (
      await openWorkflows(stack).catch((error: unknown) => {
        problems.push(`cannot list open workflows: ${String(error)}`);
        return [];
      })
    ).filter((id) => !leftOpenOnPurpose.has(id));
    for (const id of open) {
      await stack.env.client.workflow
        .getHandle(id)
        .terminate('left open by a test')
        .catch(() => {});
    }
    if (open.length > 0) problems.push(`the test left workflows running: ${open.join(', ')}`);
    for (const id of leftOpenOnPurpose) {
      await stack.env.client.workflow
        .getHandle(id)
        .terminate('left open on purpose; the test is over')
        .catch(() => {});
    }
    leftOpenOnPurpose.clear();
    stack.approvedEffectIds.clear();
    await stack.simulator.reset();
    if ((await stack.simulator.retention()) !== DEFAULT_KEY_RETENTION_MS) problems.push('retention not restored');
    if (problems.length > 0) throw new Error(problems.join('\n'));
  });
}
