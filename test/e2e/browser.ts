// Headless Chromium for the browser tests, driven by playwright-core (which downloads no browser of its own): the
// build @sparticuz/chromium ships inside its npm package (see support/chromium.ts), or CHROMIUM_PATH.

import {mkdirSync} from "node:fs";
import {join} from "node:path";
import {chromium, type Browser, type Page} from "playwright-core";
import {chromiumBuild} from "../../support/chromium.ts";

export async function launch(): Promise<Browser> {
  const build = await chromiumBuild();
  // No sandbox: CI and containers run as root, where Chromium refuses its sandbox.
  return chromium.launch({executablePath: build.executable, env: {...process.env, ...build.env}, args: ["--no-sandbox", "--disable-dev-shm-usage"]})
    .catch((e: Error) => {
      throw new Error(`Chromium (${build.source}) did not start: ${e.message}`);
    });
}

/** Errors the page throws or logs, so a test can assert there were none. */
export function collectErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(`pageerror: ${e.message}`));
  page.on("console", (m) => {
    // A 401 the page answers with its key prompt is logged by Chromium as a failed resource; it is expected.
    if (m.type() === "error" && !/status of 401/.test(m.text())) errors.push(`console: ${m.text()}`);
  });
  return errors;
}

/**
 * Screenshots for the docs (the playground in README.md and docs/operations.md), written only when
 * PLAYGROUND_SCREENSHOTS names a folder (e.g. docs), so a test run leaves the tree as it was.
 */
export async function screenshot(page: Page, name: string): Promise<void> {
  const dir = process.env.PLAYGROUND_SCREENSHOTS;
  if (!dir) return;
  mkdirSync(dir, {recursive: true});
  await page.screenshot({path: join(dir, `${name}.png`)});
}
