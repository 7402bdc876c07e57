// What the README's screenshot scripts share (screenshots.mjs, persona.mjs):
// the viewport, the images' directory (OUT, default docs/images), a page in
// a fresh Chromium profile, and saving a PNG.
import { mkdirSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { CHROMIUM_ARGS, repo } from "./jupyterkit.mjs";

export const OUT = process.env.OUT || join(repo, "docs", "images");
export const VIEWPORT = { width: 1280, height: 800 };

/**
 * Runs fn(page) with a page of Debian's Chromium (or $CHROMIUM) in a profile
 * under tmp, the page steps' page (shown when a step fails); the browser is
 * closed and its profile removed however fn ends.
 */
export async function withPage(tmp, steps, fn) {
  mkdirSync(OUT, { recursive: true });
  const profile = mkdtempSync(join(tmp, "chromium-"));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium", headless: true, args: CHROMIUM_ARGS, viewport: VIEWPORT,
  });
  try {
    const page = await browser.newPage();
    steps.page = page;
    page.on("pageerror", (e) => steps.log("page error:", e.message));
    await fn(page);
  } finally {
    await browser.close();
    rmSync(profile, { recursive: true, force: true });
  }
}

/** Saves a PNG of the page (or of clip) as OUT/name.png, and logs its size. */
export async function save(steps, page, name, clip) {
  await page.mouse.move(0, VIEWPORT.height - 1); // no hover left on a button
  await page.waitForTimeout(400); // animations and the caret settle
  const path = join(OUT, name + ".png");
  await page.screenshot({ path, clip, animations: "disabled", caret: "hide" });
  steps.log("wrote", path, Math.round(statSync(path).size / 1024) + " KB");
}
