// The README's screenshots (docs/images/*.png), taken from the real
// product: JupyterLab 4 (LAB_PYTHON's) with the extension built from
// labextension/, an Agent (code) kernel, and the scripted model
// (scripts/scriptedmodel) answering in place of a provider. `make
// screenshots` builds what it needs and runs it; it is no test (nothing is
// asserted beyond what each picture needs to show) and not part of `make test`.
//
// Environment: LAB_PYTHON, AGENTKERNEL_BIN, SCRIPTED_BIN, LAB_EXTENSION (as
// for lab.test.mjs); OUT, the images' directory (default docs/images).
//
// The notebook is neutral (sales.ipynb in a fresh directory under /tmp),
// the keys are fake and shown masked, and the key file's path is the
// temporary home's.
import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import {
  Steps, TIMEOUT, attached, commOpen, jupyterEnv, runTest, setting, sidebar, startJupyter, startModel,
  themeMenu, until, writeNotebook,
} from "./jupyterkit.mjs";
import { VIEWPORT, save as saveShot, withPage } from "./shots.mjs";

const steps = new Steps("screenshots");
const step = (name, fn) => steps.step(name, fn);

let model;
let callN = 0;
/** A turn that calls tool with input. */
const call = (tool, input) => ({ steps: [{ toolCall: { id: "s" + ++callN, name: tool, args: [JSON.stringify(input)] } }, { usage: { input: 1700, output: 40 } }] });
/** A turn that streams text in pieces, with its token usage. */
const say = (...pieces) => ({ steps: [{ text: pieces }, { usage: { input: 1850, output: 96 } }] });

const cells = (page) => page.locator(".jp-Notebook .jp-Cell");

/** The notebook: a title, a DataFrame, an empty cell. */
function salesCells() {
  const code = (id, source) => ({ id, cell_type: "code", metadata: {}, source, outputs: [], execution_count: null });
  return [
    { id: "title", cell_type: "markdown", metadata: {}, source: "# Quarterly sales\nTotals by region, from the sales table." },
    code("load", 'import pandas as pd\n\ndf = pd.DataFrame({\n    "region": ["north", "south", "east", "west", "north", "south"],\n' +
      '    "quarter": ["Q1", "Q1", "Q1", "Q1", "Q2", "Q2"],\n    "revenue": [120.5, 80.0, 95.25, 60.0, 130.0, 88.5],\n})\ndf.head()'),
    code("scratch", ""),
  ];
}

/** Waits for the model's queue to be empty and the sidebar idle. */
async function turnDone(page) {
  await until("the model's turns to be served", async () => (await model.pending()) === 0);
  await sidebar(page).locator("#status").filter({ hasText: /idle/ }).waitFor({ timeout: TIMEOUT });
}

async function send(page, text) {
  await sidebar(page).locator("#prompt").fill(text);
  await sidebar(page).locator("#send").click();
}

const save = (page, name, clip) => saveShot(steps, page, name, clip);

/** The bounding box of a locator, grown by pad and kept inside the viewport. */
async function box(locator, pad = 0) {
  const b = await locator.boundingBox();
  const x = Math.max(0, b.x - pad), y = Math.max(0, b.y - pad);
  return { x, y, width: Math.min(VIEWPORT.width - x, b.width + 2 * pad), height: Math.min(VIEWPORT.height - y, b.height + 2 * pad) };
}

/** Drags the handle between the notebook and the sidebar until the sidebar is width px wide. */
async function widenSidebar(page, width) {
  const handles = page.locator("#jp-main-split-panel > .lm-SplitPanel-handle:not(.lm-mod-hidden)");
  const h = await handles.last().boundingBox();
  const now = (await page.locator("#jp-right-stack").boundingBox()).width;
  const x = h.x + h.width / 2, y = h.y + h.height / 2;
  await page.mouse.move(x, y);
  await page.mouse.down();
  await page.mouse.move(x - (width - now), y, { steps: 8 });
  await page.mouse.up();
}

async function run(tmp) {
  for (const d of ["work", "home", "config", "runtime", "data", "agent-data"]) mkdirSync(join(tmp, d), { recursive: true });
  setting(tmp, "@jupyterlab/apputils-extension:notification", { fetchNews: "false", checkForUpdates: false });
  model = await startModel();
  const env = { ...jupyterEnv(tmp, model), OPENAI_API_KEY: "sk-demo-0000-not-a-real-key-7f3a" };
  for (const name of ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "XDG_CONFIG_HOME"]) delete env[name];
  const prefix = join(tmp, "prefix");
  execFileSync(process.env.AGENTKERNEL_BIN, ["install", "--prefix", prefix, "--probe=false"], { env, stdio: "inherit" });
  cpSync(process.env.LAB_EXTENSION, join(prefix, "share", "jupyter", "labextensions", "@agentkernel", "jupyterlab"), { recursive: true });
  writeNotebook(join(tmp, "work", "sales.ipynb"), "agent-code", "Agent (code)", salesCells());

  const lab = await startJupyter({ python: process.env.LAB_PYTHON, app: "jupyterlab", tmp, env,
    args: ["--LabApp.expose_app_in_browser=True"] });
  await withPage(tmp, steps, async (page) => {
    await step("sales.ipynb opens on Agent (code) with the sidebar; its DataFrame cell runs", async () => {
      await page.goto(`${lab.base}/lab/tree/sales.ipynb?token=${lab.token}`);
      await attached(page);
      await commOpen(page);
      // The file browser closed: the notebook and the sidebar share the width.
      await page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current").click();
      await widenSidebar(page, 420);
      await cells(page).nth(1).locator(".jp-InputPrompt").click();
      await page.keyboard.press("Shift+Enter");
      await cells(page).nth(1).locator(".jp-OutputArea-output table").waitFor({ timeout: TIMEOUT });
    });

    await step("completion.png: ghost text after df. in a cell", async () => {
      await model.enqueue({ steps: [{ text: ["groupby(\"region\")[\"revenue\"]", ".sum()"] }] });
      const cell = cells(page).nth(2);
      await cell.locator(".cm-content").click();
      await page.keyboard.insertText("by_region = df");
      await page.keyboard.type(".");
      await cell.locator(".jp-GhostText").filter({ hasText: "sum()" }).waitFor({ timeout: TIMEOUT });
      await save(page, "completion", await box(page.locator(".jp-NotebookPanel"), 0));
      await page.keyboard.press("Escape");
      await until("the completion served", async () => (await model.pending()) === 0);
      // The cell emptied again, in command mode.
      await cell.locator(".cm-content").click();
      await page.keyboard.press("Control+a");
      await page.keyboard.press("Delete");
      await page.keyboard.press("Escape");
    });

    await step("sidebar.png: a prompt, its code run (approved) and the streamed answer", async () => {
      const code = 'df.groupby("region")["revenue"].sum().sort_values(ascending=False)';
      await model.enqueue(
        { steps: [{ text: ["I'll total the revenue by region."] }, ...call("execute_code", { code }).steps] },
        say("**North** leads with 250.50, then ", "south (168.50), east (95.25) and west (60.00). ",
          "North and south are the only regions with Q2 sales so far."));
      await send(page, "Which region sold the most?");
      const approve = sidebar(page).locator("#approve");
      await approve.waitFor({ state: "visible", timeout: TIMEOUT });
      await approve.click();
      await sidebar(page).locator("#timeline").filter({ hasText: "only regions with Q2 sales" }).waitFor({ timeout: TIMEOUT });
      await turnDone(page);
      await save(page, "sidebar");
    });

    await step("notebook-edit.png: the agent inserted a cell, and its edit of the user's cell awaits review", async () => {
      await model.enqueue(
        call("notebook_insert_cell", { source: 'by_region = df.groupby("region")["revenue"].sum()\nby_region.plot.bar(title="Revenue by region")', index: 2 }),
        call("notebook_edit_cell", { id: "load", search: "df.head()", replace: "df.head(3)" }),
        say("Added a chart cell and shortened the preview."));
      await send(page, "Add a chart of it below the data, and show only three rows");
      await until("the inserted cell", async () => (await cells(page).nth(2).innerText()).includes("Revenue by region"));
      await sidebar(page).locator("#ask.review .celldiff").waitFor({ timeout: TIMEOUT });
      await save(page, "notebook-edit");
      await sidebar(page).locator("#approve").click();
      await turnDone(page);
    });

    await step("settings.png: the settings view, a key saved and shown masked", async () => {
      const sb = sidebar(page);
      await sb.locator("#settingsBtn").click();
      await sb.locator("#settingsView").waitFor({ state: "visible", timeout: TIMEOUT });
      const row = sb.locator('li.key-row[data-provider="anthropic"]');
      await row.locator(".key-input").fill("sk-ant-demo-not-a-real-key-c41e");
      await row.locator(".key-save").click();
      await row.locator(".key-status").filter({ hasText: "c41e" }).waitFor({ timeout: TIMEOUT });
      await sb.locator("#svEffort").selectOption("high").catch(() => {});
      // From the top of the view (the model picker) to its last key: the
      // key file's path below, a temporary directory's, is left out.
      await sb.locator("#settingsView").evaluate((n) => { n.scrollTop = 0; });
      await sb.locator("#svKeys").evaluate((n) => n.ownerDocument.activeElement && n.ownerDocument.activeElement.blur());
      const side = await box(page.locator("#agentkernel-sidebar"));
      const keys = await sb.locator("#svKeys").boundingBox(); // in the page's coordinates
      await save(page, "settings", { ...side, height: Math.min(side.height, keys.y + keys.height + 8 - side.y) });
      await sb.locator("#settingsBtn").click();
      await sb.locator("#settingsView").waitFor({ state: "hidden", timeout: TIMEOUT });
    });

    await step("mention.png: @d typed in the sidebar's prompt box, the list offering df", async () => {
      const sb = sidebar(page);
      await sb.locator("#prompt").click();
      await sb.locator("#prompt").pressSequentially("Plot revenue by quarter from @d");
      await sb.locator("#mentionList li.mention").filter({ hasText: "@df" }).first().waitFor({ timeout: TIMEOUT });
      await save(page, "mention");
      await page.keyboard.press("Escape");
      await sb.locator("#prompt").fill("");
    });

    await step("dark.png: the same in JupyterLab Dark", async () => {
      await themeMenu(page, "JupyterLab Dark");
      await until("the sidebar in the dark theme", async () =>
        (await sidebar(page).locator("html").evaluate(() => getComputedStyle(document.documentElement).colorScheme)) === "dark");
      // The timeline at its end again (the settings view moved it): the last answer.
      await sidebar(page).locator("#timeline > *").last().evaluate((n) => n.scrollIntoView({ block: "end" }));
      await page.waitForTimeout(500);
      await save(page, "dark");
    });
  });
}

runTest(steps, "ak-screenshots-", run);
