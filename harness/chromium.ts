// Debian's Chromium, headless, driven by playwright-core: never a browser download. The Web UI tests and
// the demo's screenshots use it; everything it loads is on loopback.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';

export const chromiumPath = () => process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export async function launchChromium(
  viewport = { width: 1400, height: 1000 },
): Promise<{ context: BrowserContext; close(): Promise<void> }> {
  const profile = mkdtempSync(join(tmpdir(), 'effect-ledger-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath(),
    headless: true,
    viewport,
    // No background networking: this machine has no internet, and the UI is all on loopback.
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
