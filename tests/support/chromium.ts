// Headless Chromium for the browser tests: Debian's `chromium` package (.ci/run installs it), driven by playwright-core
// (no bundled browser download). Each launch gets a fresh profile directory, removed on close.
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium, type Locator, type Page } from "playwright-core";

export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

/** Why the browser tests cannot run here, or undefined when they can. */
export function chromiumMissing(): string | undefined {
  return existsSync(CHROMIUM) ? undefined : `${CHROMIUM} not found: apt-get install -y chromium (or set CHROMIUM_PATH)`;
}

const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export type Browser = { context: BrowserContext; close: () => Promise<void> };

/** A browser with a fresh --user-data-dir (playwright passes the directory as that flag). */
export async function launchChromium(): Promise<Browser> {
  const profile = mkdtempSync(join(tmpdir(), "console-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: FLAGS,
    viewport: { width: 1280, height: 900 },
  });
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/**
 * Clicks `target` (a form's submit button, a link) and waits until the page it leads to has loaded, then checks that
 * its URL matches `url`. `page.waitForURL` alone would not wait: it returns at once when the current URL already
 * matches, as it does when a form's POST redirects back to the page it was sent from, and the next read would see the
 * page before the submit.
 */
export async function navigated(page: Page, target: Locator, url: RegExp): Promise<void> {
  await Promise.all([page.waitForEvent("load"), target.click()]);
  if (!url.test(page.url())) throw new Error(`after the click the page is ${page.url()}, not ${url}`);
}
