// Browser tests of issue 36's inline completions and settings view, in
// JupyterLab 4 (the PyPI stack, LAB_PYTHON's) with the extension built from
// labextension/ and the scripted model; Debian's chromium. Run through
// run.sh (LAB_PYTHON, AGENTKERNEL_BIN, SCRIPTED_BIN, LAB_EXTENSION, as for
// lab.test.mjs); screenshots go to
// tests/artifacts/complete-*.png.
//
// The kernel starts with a model and no key (an Anthropic model at the
// scripted server, as at a company's proxy, no ANTHROPIC_API_KEY): its
// request carries no key and is refused (401). A key saved in the sidebar's settings view makes the
// next prompt work in the same kernel; the key file is 0600. Typing in a
// cell where df is a pandas DataFrame shows ghost text written by the model,
// whose request carried df's columns; Tab accepts it; no output appears; a
// keystroke while a request is open cancels it (its answer never shows).
// Completions switched off in the Settings Editor close the comm and ask
// nothing as the user types; on again, the next keystroke asks.
// At the end the key is in no page, no frame the kernel sent, no log and no
// file of the store.
import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import assert from "node:assert/strict";
import { chromium } from "playwright-core";
import {
  CHROMIUM_ARGS, Steps, TIMEOUT, attached, jupyterEnv, runTest, settingsEntry, sidebar, startJupyter, startModel, until, writeNotebook,
} from "./jupyterkit.mjs";

const steps = new Steps("complete");
// MODEL is the kernel's model.
const MODEL = "anthropic:claude-sonnet-4-5";
const step = (name, fn) => steps.step(name, fn);

// KEY is the key typed in the settings view: of no known shape, so that
// only the saved keys' scrubbing could hide it.
const KEY = "sk-ant-sidebar-" + Math.random().toString(36).slice(2) + "-only-typed-once";

// cellOf is the index-th cell of the notebook.
const cellOf = (page, index) => page.locator(".jp-Notebook .jp-Cell").nth(index);

// newCell adds a code cell at the end and focuses its editor.
async function newCell(page) {
  const n = await page.locator(".jp-Notebook .jp-Cell").count();
  await cellOf(page, n - 1).locator(".cm-content").click();
  await page.keyboard.press("Escape");
  await page.keyboard.press("b");
  await until("a new cell", async () => (await page.locator(".jp-Notebook .jp-Cell").count()) === n + 1);
  await cellOf(page, n).locator(".cm-content").click();
  return n;
}

// runPrompt puts text in the last cell at once (one change: the inline
// completer asks once, and the kernel completes no %%agent cell) and runs it.
async function runPrompt(page, text) {
  await page.locator(".jp-Notebook .jp-Cell").last().locator(".cm-content").click();
  await page.keyboard.insertText(text);
  await page.keyboard.press("Shift+Enter");
}

// typeCode types text in the focused editor: all but its last character at
// once, then that one as a keystroke, so that the completer's one request
// is the whole text's whatever the typing speed.
async function typeCode(page, text) {
  await page.keyboard.insertText(text.slice(0, -1));
  await page.keyboard.type(text.slice(-1));
}

// source is a cell's text as its editor shows it.
const source = (page, index) => cellOf(page, index).locator(".cm-content").innerText();

async function run(tmp) {
  for (const d of ["work", "home", "config", "runtime", "data", "agent-data"]) mkdirSync(join(tmp, d), { recursive: true });
  const apputils = join(tmp, "config", "lab", "user-settings", "@jupyterlab", "apputils-extension");
  mkdirSync(apputils, { recursive: true });
  writeFileSync(join(apputils, "notification.jupyterlab-settings"), JSON.stringify({ fetchNews: "false" }));
  const model = await startModel();
  const { enqueue, pending, requests } = model;
  // A model, no key: the user's config directory is the temporary home's.
  const env = { ...jupyterEnv(tmp, model), AGENTKERNEL_MODEL: MODEL, ANTHROPIC_BASE_URL: model.url };
  for (const name of ["ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY", "XDG_CONFIG_HOME"]) delete env[name];
  const keyFile = join(tmp, "home", ".config", "agentkernel", "credentials.json");
  const prefix = join(tmp, "prefix");
  execFileSync(process.env.AGENTKERNEL_BIN, ["install", "--prefix", prefix, "--probe=false"], { env, stdio: "inherit" });
  cpSync(process.env.LAB_EXTENSION, join(prefix, "share", "jupyter", "labextensions", "@agentkernel", "jupyterlab"), { recursive: true });
  writeNotebook(join(tmp, "work", "code.ipynb"), "agent-code", "Agent (code)");

  const lab = await startJupyter({ python: process.env.LAB_PYTHON, app: "jupyterlab", tmp, env });
  const kernelId = async () => {
    const ss = await (await fetch(`${lab.base}/api/sessions?token=${lab.token}`)).json();
    const s = ss.find((x) => x.path.endsWith("code.ipynb"));
    return s && s.kernel && s.kernel.id;
  };
  const profile = mkdtempSync(join(tmp, "chromium-"));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium", headless: true, args: CHROMIUM_ARGS, viewport: { width: 1400, height: 900 },
  });
  // What the kernel sends the page (the notebook's WebSocket carries the
  // sidebar's and the completer's comms), as text; and what the page sends.
  const received = [];
  const sent = [];
  const text = (p) => (typeof p === "string" ? p : Buffer.from(p).toString("utf8"));
  try {
    const page = await browser.newPage();
    steps.page = page;
    page.on("pageerror", (e) => steps.log("page error:", e.message));
    page.on("websocket", (ws) => {
      ws.on("framereceived", (f) => received.push(text(f.payload)));
      ws.on("framesent", (f) => sent.push(text(f.payload)));
    });
    let kernel;

    await step("a notebook on Agent (code) runs Python: df is a DataFrame", async () => {
      await page.goto(`${lab.base}/lab/tree/code.ipynb?token=${lab.token}`);
      await attached(page);
      kernel = await kernelId();
      const cell = cellOf(page, 0);
      await cell.locator(".cm-content").click();
      // insertText: the editor's bracket closing stays out of it.
      await page.keyboard.insertText('import pandas as pd\ndf = pd.DataFrame({"revenue": [120.5, 80.0], "region": ["north", "south"]})\nprint(df.shape)');
      await page.keyboard.press("Shift+Enter");
      await cell.locator(".jp-OutputArea-output").filter({ hasText: "(2, 2)" }).waitFor({ timeout: TIMEOUT });
    });

    await step("with no key, the model's API refuses a prompt", async () => {
      const before = (await requests()).length;
      await enqueue({ status: 401 });
      await runPrompt(page, "%%agent\nSay hello");
      await page.locator(".jp-OutputArea-output").filter({ hasText: "401" }).first().waitFor({ timeout: TIMEOUT });
      const reqs = await requests();
      assert.equal(reqs.length, before + 1);
      assert.equal(reqs.at(-1).key, "", "a key was sent");
    });

    await step("the sidebar's settings view lists the models and the providers, no key set", async () => {
      const sb = sidebar(page);
      await sb.locator("#settingsBtn").click();
      await sb.locator("#settingsView").waitFor({ state: "visible", timeout: TIMEOUT });
      const row = sb.locator('li.key-row[data-provider="anthropic"]');
      await row.locator(".key-status").filter({ hasText: "No key." }).waitFor({ timeout: TIMEOUT });
      await sb.locator('li.key-row[data-provider="openai"]').waitFor({ timeout: TIMEOUT });
      const models = await sb.locator("#svModel option").allInnerTexts();
      assert.ok(models.includes(MODEL) && models.some((m) => m.startsWith("openai:")), JSON.stringify(models));
      assert.equal(await sb.locator("#svModel").inputValue(), MODEL);
      assert.ok((await sb.locator("#svEffort option").allInnerTexts()).includes("high"));
      assert.ok((await sb.locator("#svMode option").count()) > 1, "no permission modes");
      // The view sets the permission mode (the header's tooltip says it).
      const mode = async () => (await sb.locator("#settingsBtn").getAttribute("title")) || "";
      await sb.locator("#svMode").selectOption("plan");
      await until("the permission mode plan", async () => (await mode()).includes("permissions plan"));
      await sb.locator("#svMode").selectOption("default");
      await until("the permission mode default", async () => (await mode()).includes("permissions default"));
      await steps.shot(page, "01-settings-no-key");
    });

    await step("a key saved in the settings view is shown masked and kept 0600", async () => {
      const sb = sidebar(page);
      const row = sb.locator('li.key-row[data-provider="anthropic"]');
      assert.equal(await row.locator(".key-input").getAttribute("type"), "password");
      await row.locator(".key-input").fill(KEY);
      await row.locator(".key-save").click();
      await row.locator(".key-status").filter({ hasText: "Saved: set, ends in " + KEY.slice(-4) }).waitFor({ timeout: TIMEOUT });
      assert.equal(await row.locator(".key-input").inputValue(), "", "the field keeps the key");
      assert.equal(statSync(keyFile).mode & 0o777, 0o600, "the key file's mode");
      assert.equal(statSync(join(tmp, "home", ".config", "agentkernel")).mode & 0o777, 0o700, "the key file's directory");
      assert.ok(readFileSync(keyFile, "utf8").includes(KEY));
      await steps.shot(page, "02-settings-key-saved");
    });

    await step("the next prompt uses the key, in the same kernel (no restart)", async () => {
      await enqueue({ steps: [{ text: ["Hello ", "with the saved key."] }] });
      await runPrompt(page, "%%agent\nSay hello again");
      await page.locator(".jp-OutputArea-output").filter({ hasText: "Hello with the saved key." }).first().waitFor({ timeout: TIMEOUT });
      const reqs = await requests();
      assert.equal(reqs.at(-1).key, KEY, "the model was asked with another key");
      assert.equal(await kernelId(), kernel, "the kernel was restarted");
    });

    await step("typing df. shows the model's ghost text, which knew df's columns; Tab accepts it; no output", async () => {
      const before = (await requests()).length;
      await enqueue({ steps: [{ text: ["revenue", ".sum()"] }] });
      const index = await newCell(page);
      await typeCode(page, "total = df.");
      const ghost = cellOf(page, index).locator(".jp-GhostText");
      await ghost.filter({ hasText: "revenue.sum()" }).waitFor({ timeout: TIMEOUT });
      await steps.shot(page, "03-ghost-text");
      const req = (await requests())[before];
      assert.ok(req, "the model got no completion request");
      const body = JSON.stringify(req.body);
      for (const want of ["revenue", "region", "DataFrame", "total = df."]) {
        assert.ok(body.includes(want), "the completion request lacks " + want + ": " + body.slice(0, 2000));
      }
      assert.equal(req.key, KEY);
      await page.keyboard.press("Tab");
      await until("the completion accepted", async () => (await source(page, index)).trim() === "total = df.revenue.sum()");
      assert.equal(await cellOf(page, index).locator(".jp-OutputArea-output").count(), 0, "the completion put an output in its cell");
      assert.equal(await cellOf(page, 0).locator(".jp-OutputArea-output").count(), 1, "the completion changed the first cell's output");
      assert.equal(await pending(), 0);
    });

    await step("a keystroke cancels the open request: its answer never shows, the next one does", async () => {
      const before = (await requests()).length;
      const cancels = sent.filter((f) => f.includes('"cancel"')).length;
      await enqueue({ steps: [{ delayMs: 3000 }, { text: ["STALE_ANSWER"] }] }, { steps: [{ text: ["egion.unique()"] }] });
      const index = await newCell(page);
      await typeCode(page, "regions = df.");
      await until("the first request at the model", async () => (await requests()).length > before);
      await page.keyboard.type("r");
      const ghost = cellOf(page, index).locator(".jp-GhostText");
      await ghost.filter({ hasText: "egion.unique()" }).waitFor({ timeout: TIMEOUT });
      assert.ok(sent.filter((f) => f.includes('"cancel"')).length > cancels, "no cancel went to the kernel");
      await page.waitForTimeout(3500); // the stale answer's time
      assert.equal(await page.locator(".jp-GhostText", { hasText: "STALE_ANSWER" }).count(), 0, "a cancelled answer showed");
      assert.ok(!received.some((f) => f.includes("STALE_ANSWER")), "the kernel answered a cancelled request");
      await page.keyboard.press("Escape");
    });

    await step("typing in a markdown cell asks nothing: no comm request, no model request; a code cell after it does", async () => {
      const before = (await requests()).length;
      const frames = sent.length;
      const index = await newCell(page);
      await page.keyboard.press("Escape");
      await page.keyboard.press("m"); // the new cell becomes markdown
      await until("a markdown cell", async () => (await cellOf(page, index).getAttribute("class")).includes("jp-MarkdownCell"));
      await cellOf(page, index).locator(".cm-content").click();
      await typeCode(page, "The total revenue is df.");
      await page.waitForTimeout(2000); // eight times the delay a request waits for
      const asked = sent.slice(frames).filter((f) => f.includes('"prefix"'));
      assert.deepEqual(asked, [], "the page asked the kernel to complete a markdown cell");
      assert.equal((await requests()).length, before, "the model was asked to complete a markdown cell");
      assert.equal(await cellOf(page, index).locator(".jp-GhostText").count(), 0, "ghost text in a markdown cell");
      await enqueue({ steps: [{ text: ["revenue.max()"] }] });
      const code = await newCell(page);
      await typeCode(page, "top = df.");
      await cellOf(page, code).locator(".jp-GhostText").filter({ hasText: "revenue.max()" }).waitFor({ timeout: TIMEOUT });
      const reqs = await requests();
      assert.equal(reqs.length, before + 1, "one request, the code cell's");
      assert.ok(JSON.stringify(reqs.at(-1).body).includes("top = df."), "the request was not the code cell's");
      assert.ok(sent.slice(frames).some((f) => f.includes('"cellType":"code"')),
        "the request did not say its cell type");
      await page.keyboard.press("Escape");
    });

    await step("completions off in the Settings Editor: typing asks nothing, the comm is closed; on again, ghost text is back", async () => {
      await setCompletions(page, lab, false);
      await until("the page to close the completion comm", async () => sent.some((f) => f.includes('"comm_close"')));
      await page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab", { hasText: "code.ipynb" }).click();
      const before = (await requests()).length;
      const frames = sent.length;
      const index = await newCell(page);
      await typeCode(page, "mean = df.");
      await page.waitForTimeout(2000); // eight times the delay a request waits for
      assert.equal((await requests()).length, before, "the model was asked for a completion while they were off");
      const asked = sent.slice(frames).filter((f) => f.includes("agentkernel.complete") || f.includes('"prefix"'));
      assert.deepEqual(asked, [], "the page asked the kernel while completions were off");
      assert.equal(await cellOf(page, index).locator(".jp-GhostText").count(), 0, "ghost text while completions were off");
      await steps.shot(page, "04-completions-off");

      await setCompletions(page, lab, true);
      await page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab", { hasText: "code.ipynb" }).click();
      await enqueue({ steps: [{ text: ["revenue.mean()"] }] });
      await cellOf(page, index).locator(".cm-content").click();
      await page.keyboard.press("End");
      await page.keyboard.press("Backspace");
      await page.keyboard.type(".");
      await cellOf(page, index).locator(".jp-GhostText").filter({ hasText: "revenue.mean()" }).waitFor({ timeout: TIMEOUT });
      assert.equal((await requests()).length, before + 1, "on again: one request for the keystroke");
      await page.keyboard.press("Escape");
    });

    await step("the key is in no page, no frame from the kernel, no log and no stored file", async () => {
      const pages = [await page.content(), await sidebar(page).locator("html").evaluate((n) => n.outerHTML)];
      const values = await sidebar(page).locator("input").evaluateAll((ns) => ns.map((n) => n.value));
      for (const p of [...pages, ...values]) assert.ok(!p.includes(KEY), "the page holds the key");
      assert.ok(received.length > 0, "no frames were seen");
      assert.ok(!received.some((f) => f.includes(KEY)), "the kernel sent the key to the page");
      assert.ok(sent.some((f) => f.includes(KEY)), "the key was never sent (the test saw no frames)");
      assert.ok(!lab.stderr().includes(KEY), "the server's and kernels' log holds the key");
      const leaks = filesHolding(tmp, KEY, [keyFile, profile]);
      assert.deepEqual(leaks, [], "files hold the key");
      const stored = readdirSync(join(tmp, "agent-data"), { recursive: true });
      assert.ok(stored.some((f) => /\.(db|sqlite)/.test(f)) && stored.some((f) => f.endsWith(".jsonl")),
        "no store or event log was looked at: " + JSON.stringify(stored));
    });

    await step("a %agent magic run first in an Agent (code) kernel gets the prompt [1]:, not [*]: forever", async () => {
      // A notebook of its own (a fresh kernel: no code cell run yet), in a
      // page of its own.
      writeNotebook(join(tmp, "work", "magic.ipynb"), "agent-code", "Agent (code)");
      const p = await browser.newPage();
      try {
        await p.goto(`${lab.base}/lab/tree/magic.ipynb?token=${lab.token}`);
        const nb = p.locator(".jp-NotebookPanel:not(.lm-mod-hidden)").filter({ has: p.locator(".jp-Notebook") });
        await until("magic.ipynb's kernel", async () => {
          const ss = await (await fetch(`${lab.base}/api/sessions?token=${lab.token}`)).json();
          return ss.some((x) => x.path.endsWith("magic.ipynb") && x.kernel && x.kernel.execution_state === "idle");
        });
        const cell = nb.locator(".jp-Cell").first();
        await cell.locator(".cm-content").click();
        await p.keyboard.insertText("%agent permissions");
        await p.keyboard.press("Shift+Enter");
        await cell.locator(".jp-OutputArea-output").first().waitFor({ timeout: TIMEOUT });
        await until("the magic cell's prompt [1]:", async () => (await cell.locator(".jp-InputPrompt").innerText()).trim() === "[1]:");
        await steps.shot(p, "05-magic-first-cell");
      } finally {
        await p.close();
      }
    });
  } finally {
    await browser.close();
    rmSync(profile, { recursive: true, force: true });
  }
}

// setCompletions sets "Inline completions" in the Settings Editor
// (Settings > Settings Editor, the plugin found by its name) and waits
// until the server holds it.
async function setCompletions(page, lab, on) {
  await (await settingsEntry(page, "Agent Inline Completions")).click();
  const box = page.locator(".jp-SettingsForm", { hasText: "Suggest code as you type" }).locator('input[type="checkbox"]').first();
  await box.waitFor({ timeout: TIMEOUT });
  if (on) await box.check(); else await box.uncheck();
  await until("the server to hold inlineCompletions " + on, async () => {
    const r = await fetch(`${lab.base}/lab/api/settings/@agentkernel/jupyterlab:completer?token=${lab.token}`);
    const j = await r.json();
    return (j.settings && j.settings.inlineCompletions !== undefined ? j.settings.inlineCompletions : true) === on;
  });
}

// filesHolding lists the files under dir whose bytes hold s, but those in
// skip (files, or directories and all below them).
function filesHolding(dir, s, skip) {
  const out = [];
  for (const name of readdirSync(dir, { recursive: true })) {
    const path = join(dir, name);
    if (skip.some((k) => path === k || path.startsWith(k + "/"))) continue;
    let st;
    try { st = statSync(path); } catch { continue; } // gone meanwhile
    if (st.isFile() && readFileSync(path).includes(s)) out.push(path);
  }
  return out;
}

runTest(steps, "ak-complete-", run);
