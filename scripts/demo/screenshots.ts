// The demo's two screenshots for the docs, in headless Chromium: Mailpit's web UI showing the invoice
// email, and the Temporal Web UI showing the effect that waits in UNKNOWN. `npm run demo -- --screenshots docs/`.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { launchChromium } from '../../harness/chromium.js';
import { waitFor } from '../../harness/wait-for.js';

export interface ScreenshotTargets {
  /** Mailpit's base URL and the message to open (its Mailpit ID) and a text it shows. */
  mailpit: { url: string; messageId: string; shows: string };
  /** The Temporal Web UI's base URL, the namespace, and the waiting effect's workflow and run. */
  temporal: { uiUrl: string; namespace: string; workflowId: string; runId: string };
}

/** The UI renders summaries and details as markdown in iframes: wait until one shows `text`. */
function renderedText(page: Page, text: string): Promise<true> {
  return waitFor(async () => {
    for (const frame of page.frames())
      if (frame.url().includes('/render') && (await frame.content()).includes(text)) return true as const;
    return undefined;
  }, `the Temporal UI to render "${text}"`);
}

export async function takeScreenshots(dir: string, targets: ScreenshotTargets): Promise<string[]> {
  mkdirSync(dir, { recursive: true });
  // Viewports just large enough for what each shot shows keep the PNGs small.
  const browser = await launchChromium({ width: 1200, height: 480 });
  try {
    const page = await browser.context.newPage();
    const { mailpit, temporal } = targets;
    await page.goto(`${mailpit.url}/view/${mailpit.messageId}`);
    await page.getByText(mailpit.shows).filter({ visible: true }).first().waitFor();
    const mailpitShot = join(dir, 'demo-mailpit.png');
    await page.screenshot({ path: mailpitShot });

    const { uiUrl, namespace, workflowId, runId } = temporal;
    await page.setViewportSize({ width: 1400, height: 780 });
    await page.goto(`${uiUrl}/namespaces/${namespace}/workflows/${encodeURIComponent(workflowId)}/${runId}/history`);
    await page.getByRole('tab', { name: 'User Metadata' }).click();
    await renderedText(page, 'UNKNOWN');
    await renderedText(page, 'Awaiting: a human decision');
    const temporalShot = join(dir, 'demo-temporal-unknown.png');
    await page.screenshot({ path: temporalShot });
    return [mailpitShot, temporalShot];
  } finally {
    await browser.close();
  }
}
