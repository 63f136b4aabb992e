// A workflow history written as the JSON that replay (and `temporal workflow show -o json`) reads.
import { writeFileSync } from 'node:fs';
import type { Client } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';

export async function captureHistory(client: Client, effectId: string, out: string): Promise<void> {
  const history = await client.workflow.getHandle(effectId).fetchHistory();
  writeFileSync(out, `${historyToJSON(history)}\n`);
}
