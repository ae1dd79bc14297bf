import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

// The browser tests' Chromium: Debian's, driven by playwright-core, headless and offline.

/** Where Debian's chromium package puts the browser (scripts/install-test-tools.sh installs it). */
export const CHROMIUM = '/usr/bin/chromium';

/** Starts headless Chromium; throws naming the package when it is missing, for `what` ("the report test"). */
export async function launchChromium(what: string): Promise<Browser> {
  if (!existsSync(CHROMIUM))
    throw new Error(`${CHROMIUM} is missing: ${what} needs Chromium ("apt-get install chromium"; .ci/run installs it)`);
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
}
