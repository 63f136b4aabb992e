// Operators work from the Temporal Web UI: proven in a real headless Chromium against the dev server's
// UI. Find the stuck effect through the list filter, open it, send a decision from "Send a Signal".
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { eq } from 'drizzle-orm';
import type { Page } from 'playwright-core';
import { assertProviderSaw, liveStatus, resultOf, socialPostsFor, waitForStage } from '../harness/effect-probes.js';
import { type Stack, startStack } from '../harness/local-stack.js';
import { postRequest } from '../harness/sample-requests.js';
import { decisions } from '../ledger/schema.js';
import { waitFor } from '../stack/wait-for.js';
import { artifactsDir, launchBrowser } from './support/browser.js';
import { isolateEachTest, leftOpenOnPurpose, TEST_TIMEOUT } from './support/isolation.js';

/** The key-less provider drops the connection before committing: UNKNOWN, readback absent, a human must decide. */
async function stuckEffect(stack: Stack, effectId: string, text: string): Promise<void> {
  await stack.simulator.fault('fail_before_commit', { path: '/social/v1/posts' });
  await stack.effects.approve(postRequest(effectId, text));
  await waitForStage(stack, effectId, 'unknown', 'a human decision');
}

/** Adds our search attributes as list columns (what the operator guide tells people to do once). */
async function showEffectColumns(page: Page): Promise<void> {
  await page.getByTestId('workflows-summary-table-configuration-button').click();
  for (const column of ['Run ID', 'Type', 'End'])
    await page.getByRole('button', { name: `Remove ${column} column` }).click(); // make room
  for (const column of ['EffectStage', 'EffectSummary'])
    await page.getByRole('button', { name: `Add ${column} column` }).click();
  await page.getByRole('button', { name: 'Close' }).last().click();
  await page.getByText('Configure Workflows Table').waitFor({ state: 'hidden' });
}

async function openFromFilteredList(page: Page, stack: Stack, effectId: string, shot: string): Promise<void> {
  await page.goto(
    `${stack.uiUrl}/namespaces/${stack.namespace}/workflows?query=${encodeURIComponent('EffectStage="unknown"')}`,
  );
  const link = page.getByRole('link', { name: effectId, exact: true });
  await link.waitFor();
  if (shot === 'approve-retry') {
    await showEffectColumns(page);
    // Each row says what the effect is: stage, and the one-line summary.
    const row = page.getByRole('row').filter({ has: link });
    await row.getByText(`${effectId} · social-feed post.publish · post on linkedin-ru`).waitFor();
  }
  await page.screenshot({ path: `${artifactsDir}${shot}-list.png` });
  await link.click();
  await page.getByRole('button', { name: 'More Actions' }).waitFor();
}

/** The UI renders summaries and details as markdown in iframes: wait until one shows `text`. */
function renderedText(page: Page, text: string): Promise<true> {
  return waitFor(async () => {
    for (const frame of page.frames())
      if (frame.url().includes('/render') && (await frame.content()).includes(text)) return true as const;
    return undefined;
  }, `the UI to render "${text}"`);
}

async function sendSignal(page: Page, name: string, payload: string, shot: string): Promise<void> {
  await page.getByRole('button', { name: 'More Actions' }).click();
  await page.getByRole('menuitem', { name: 'Send a Signal' }).click();
  const dialog = page.locator('dialog[open]');
  await dialog.getByTestId('signal-select-button').click();
  // The names come from the worker's answer to the built-in metadata query, with our descriptions.
  const option = dialog.getByRole('option').filter({ hasText: name }).filter({ hasText: 'Payload:' });
  await option.click();
  const editor = dialog.locator('[role="textbox"][data-language="json"]');
  await editor.click();
  await page.keyboard.insertText(payload);
  // Leaving the editor pretty-prints the JSON and grows the dialog: do that before aiming at Submit.
  await dialog.getByText('json/plain').click();
  await page.screenshot({ path: `${artifactsDir}${shot}-signal.png` });
  await dialog.getByRole('button', { name: 'Submit' }).click();
  await dialog.waitFor({ state: 'detached' });
  await page.screenshot({ path: `${artifactsDir}${shot}-sent.png` });
}

describe('operators in the Temporal Web UI (headless Chromium)', () => {
  let stack: Stack;
  let browser: Awaited<ReturnType<typeof launchBrowser>>;
  before(async () => {
    // fail_before_commit cuts the connection at once: no call timeout is waited on, so none is shortened.
    stack = await startStack({ ui: true });
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await stack?.stop();
  });
  isolateEachTest(() => stack);

  test(
    'find the stuck effect by EffectStage, send approve-retry from the signal dialog → recorded, one post, actor in the ledger',
    TEST_TIMEOUT,
    async () => {
      const effectId = 'post:ui-retry';
      const page = await browser.context.newPage();
      await stack.withWorker(async () => {
        await stuckEffect(stack, effectId, 'Hello from the operator test');
        await openFromFilteredList(page, stack, effectId, 'approve-retry');
        // At a glance: the summary names the effect; the current details say the stage, attempts and what is awaited.
        await page.getByRole('tab', { name: 'User Metadata' }).click();
        await renderedText(page, `${effectId} · social-feed post.publish`);
        await renderedText(page, 'UNKNOWN');
        await renderedText(page, 'Awaiting: a human decision');
        // What to type to bind a decision to what the operator looked at.
        await renderedText(page, 'Decide on: attempt 1');
        await page.screenshot({ path: `${artifactsDir}approve-retry-effect.png`, fullPage: true });
        await sendSignal(
          page,
          'approve-retry',
          '{"actor": "ops@example.com", "reason": "checked the provider dashboard"}',
          'approve-retry',
        );
        const result = await resultOf(stack, effectId);
        assert.equal(result.stage, 'recorded');
        await page.reload();
        await page.screenshot({ path: `${artifactsDir}approve-retry-recorded.png`, fullPage: true });
      });
      assert.equal((await socialPostsFor(stack, effectId)).length, 1);
      const posts = await assertProviderSaw(stack, effectId, { posts: 2 });
      assert.deepEqual(
        posts.map((p) => p.fate),
        ['dropped', 'answered'],
      );
      const { trail } = await stack.effects.status(effectId);
      assert.equal(trail.effect.stage, 'recorded');
      assert.deepEqual(
        trail.decisions.map((d) => [d.kind, d.actor, d.accepted]),
        [['approve-retry', 'ops@example.com', true]],
      );
      // The search attribute moved on too: the effect is no longer listed as unknown.
      await waitFor(async () => {
        for await (const w of stack.env.client.workflow.list({
          query: `EffectStage = "recorded" AND WorkflowId = "${effectId}"`,
        }))
          return w;
        return undefined;
      }, 'EffectStage = "recorded" in visibility');
    },
  );

  test(
    'a malformed payload sent through the dialog is refused and recorded; the stage does not move',
    TEST_TIMEOUT,
    async () => {
      const effectId = 'post:ui-garbage';
      leftOpenOnPurpose.add(effectId); // it stays stuck in unknown: nothing decided it
      const page = await browser.context.newPage();
      await stack.withWorker(async () => {
        await stuckEffect(stack, effectId, 'Garbage test');
        await openFromFilteredList(page, stack, effectId, 'garbage');
        await sendSignal(page, 'approve-retry', '{"actor": "", "reason": 42}', 'garbage');
        const [row] = await waitFor(async () => {
          const rows = await stack.ledger.db.select().from(decisions).where(eq(decisions.effectId, effectId));
          return rows.length ? rows : undefined;
        }, 'the refused decision in the ledger');
        assert.equal(row!.accepted, false);
        assert.equal(row!.kind, 'approve-retry');
        assert.match(row!.rejectionReason ?? '', /actor must not be empty/);
        const status = await liveStatus(stack, effectId);
        assert.equal(status.stage, 'unknown');
        assert.equal(status.attempts.length, 1);
        assert.equal(status.decisions[0]?.accepted, false);
      });
      await assertProviderSaw(stack, effectId, { posts: 1 });
    },
  );
});
