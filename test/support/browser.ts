// The Web UI tests' browser (harness/chromium.ts: Debian's Chromium through playwright-core). Screenshots
// go to artifacts/ (git-ignored) for a person to look at.
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { launchChromium } from '../../harness/chromium.js';

export const artifactsDir = fileURLToPath(new URL('../../artifacts/', import.meta.url));

export async function launchBrowser(): ReturnType<typeof launchChromium> {
  mkdirSync(artifactsDir, { recursive: true });
  return launchChromium();
}
