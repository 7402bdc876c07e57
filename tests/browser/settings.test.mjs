// Browser test of the first run with no model (issue 41, item 7), in
// JupyterLab 4 (the PyPI stack, LAB_PYTHON's) with the extension built from
// labextension/ and the scripted model; Debian's chromium. Run through
// run.sh (LAB_PYTHON, AGENTKERNEL_BIN, SCRIPTED_BIN, LAB_EXTENSION, as for
// lab.test.mjs); screenshots go to tests/artifacts/settings-*.png.
//
// The kernel starts with no model, no key and no server URL in its
// environment. A prompt's cell says so, pointing to Settings first: its
// error offers "Open Settings" and no "Fix with the agent", and the
// sidebar's message offers Settings too. The button opens the sidebar's
// settings view, the page's one set of model and mode controls (the header
// has none). There, the OpenAI provider's base URL is set to the scripted
// server (as a local vLLM or llama.cpp would be), a model is picked, and
// the next prompt, in the same kernel, gets the scripted server's answer,
// with no key sent. The settings view is shown once in JupyterLab Dark.
import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import assert from "node:assert/strict";
import {
  Steps, TIMEOUT, attached, browse, jupyterEnv, runTest, sidebar, startJupyter, startModel, themeMenu, until, writeNotebook,
} from "./jupyterkit.mjs";

const steps = new Steps("settings");
const step = (name, fn) => steps.step(name, fn);

// MODEL is the model picked in the settings view: a local server's.
const MODEL = "openai:qwen2.5-coder-local";

const cellOf = (page, index) => page.locator(".jp-Notebook .jp-Cell").nth(index);

// runPrompt puts text in the last cell at once and runs it.
async function runPrompt(page, text) {
  await page.locator(".jp-Notebook .jp-Cell").last().locator(".cm-content").click();
  await page.keyboard.insertText(text);
  await page.keyboard.press("Shift+Enter");
}

async function run(tmp) {
  for (const d of ["work", "home", "config", "runtime", "data", "agent-data"]) mkdirSync(join(tmp, d), { recursive: true });
  const apputils = join(tmp, "config", "lab", "user-settings", "@jupyterlab", "apputils-extension");
  mkdirSync(apputils, { recursive: true });
  writeFileSync(join(apputils, "notification.jupyterlab-settings"), JSON.stringify({ fetchNews: "false" }));
  const model = await startModel();
  const { enqueue, requests } = model;
  // No model, no key, no server: the user's config directory is the
  // temporary home's, empty.
  const env = jupyterEnv(tmp, model);
  for (const name of ["AGENTKERNEL_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY",
    "OLLAMA_HOST", "XDG_CONFIG_HOME"]) delete env[name];
  const keyFile = join(tmp, "home", ".config", "agentkernel", "credentials.json");
  const prefix = join(tmp, "prefix");
  execFileSync(process.env.AGENTKERNEL_BIN, ["install", "--prefix", prefix, "--probe=false"], { env, stdio: "inherit" });
  cpSync(process.env.LAB_EXTENSION, join(prefix, "share", "jupyter", "labextensions", "@agentkernel", "jupyterlab"), { recursive: true });
  writeNotebook(join(tmp, "work", "first.ipynb"), "agent-code", "Agent (code)");

  const lab = await startJupyter({ python: process.env.LAB_PYTHON, app: "jupyterlab", tmp, env });
  const browser = await browse(tmp);
  try {
    const page = await browser.newPage();
    steps.page = page;
    page.on("pageerror", (e) => steps.log("page error:", e.message));
    const sb = sidebar(page);

    await step("with no model, a prompt's cell points to Settings first: an Open Settings button, no \"Fix with the agent\"", async () => {
      await page.goto(`${lab.base}/lab/tree/first.ipynb?token=${lab.token}`);
      await attached(page);
      await runPrompt(page, "%%agent\nSay hello");
      const cell = cellOf(page, 0);
      const err = cell.locator(".jp-OutputArea-output").filter({ hasText: "NoModelConfigured" });
      await err.waitFor({ timeout: TIMEOUT });
      const text = await err.innerText();
      assert.ok(text.indexOf("Settings") >= 0 && text.indexOf("Settings") < text.indexOf("AGENTKERNEL_MODEL"),
        "the message does not name Settings first: " + text);
      await cell.locator("button.ak-open-settings").waitFor({ state: "visible", timeout: TIMEOUT });
      assert.equal(await cell.locator("button", { hasText: "Fix with the agent" }).count(), 0, "Fix with the agent is offered on a configuration error");
      // The sidebar's message offers the settings too.
      await sb.locator("#timeline article.msg.error button.open-settings").waitFor({ timeout: TIMEOUT });
      await steps.shot(page, "01-no-model");
    });

    await step("one set of controls: the header has no mode, permissions or model field; the settings view has them", async () => {
      for (const id of ["#agentMode", "#permissionMode", "#model", "#settings"]) {
        assert.equal(await sb.locator(id).count(), 0, id + " is still in the header");
      }
      for (const id of ["#svModel", "#svAgentMode", "#svMode", "#svEffort"]) assert.equal(await sb.locator(id).count(), 1, id);
    });

    await step("the cell's Open Settings opens the sidebar's settings view; so does the sidebar message's", async () => {
      assert.ok(await sb.locator("#settingsView").isHidden(), "the settings view is open already");
      await cellOf(page, 0).locator("button.ak-open-settings").click();
      await sb.locator("#settingsView").waitFor({ state: "visible", timeout: TIMEOUT });
      await sb.locator('li.key-row[data-provider="ollama"] .url-input').waitFor({ timeout: TIMEOUT });
      await sb.locator("#settingsBtn").click();
      await sb.locator("#settingsView").waitFor({ state: "hidden", timeout: TIMEOUT });
      await sb.locator("#timeline article.msg.error button.open-settings").click();
      await sb.locator("#settingsView").waitFor({ state: "visible", timeout: TIMEOUT });
      // The modes are set from the view, the page's only control of them.
      await sb.locator("#svMode").selectOption("plan");
      await until("the permission mode plan", async () => (await sb.locator("#settingsBtn").getAttribute("title") || "").includes("permissions plan"));
      await sb.locator("#svMode").selectOption("default");
      await until("the permission mode default", async () => (await sb.locator("#settingsBtn").getAttribute("title") || "").includes("permissions default"));
    });

    await step("the OpenAI provider's base URL set to the scripted server, a model picked: the next prompt gets its answer, no key sent", async () => {
      const row = sb.locator('li.key-row[data-provider="openai"]');
      const url = model.url + "/v1";
      await row.locator(".url-input").fill(url);
      await row.locator(".url-save").click();
      await row.locator(".url-status").filter({ hasText: url + " (saved)" }).waitFor({ timeout: TIMEOUT });
      assert.equal(statSync(keyFile).mode & 0o777, 0o600, "the file's mode");
      assert.equal(JSON.parse(readFileSync(keyFile, "utf8")).urls.openai, url);
      await sb.locator("#svModelOther").fill(MODEL);
      await sb.locator("#svUseModel").click();
      await until("the model in use", async () => (await sb.locator("#svModel").inputValue()) === MODEL);
      await steps.shot(page, "02-base-url-saved");

      const before = (await requests()).length;
      await enqueue({ steps: [{ text: ["Hello from ", "the local server."] }] });
      await runPrompt(page, "%%agent\nSay hello again");
      await page.locator(".jp-OutputArea-output").filter({ hasText: "Hello from the local server." }).first().waitFor({ timeout: TIMEOUT });
      const reqs = await requests();
      assert.equal(reqs.length, before + 1, "the prompt did not reach the server at the saved URL");
      assert.equal(reqs.at(-1).key, "", "a key was sent");
      assert.ok(JSON.stringify(reqs.at(-1).body).includes("qwen2.5-coder-local"), "the request names another model");
    });

    await step("the settings view in JupyterLab Dark; and back to Light", async () => {
      await themeMenu(page, "JupyterLab Dark");
      await until("the sidebar to wear the dark theme", async () =>
        (await sb.locator("body").evaluate(() => getComputedStyle(document.body).backgroundColor)) !== "rgb(255, 255, 255)");
      await sb.locator("#settingsView").waitFor({ state: "visible", timeout: TIMEOUT });
      await steps.shot(page, "03-dark");
      await themeMenu(page, "JupyterLab Light");
      await until("the sidebar to wear the light theme", async () =>
        (await sb.locator("body").evaluate(() => getComputedStyle(document.body).backgroundColor)) === "rgb(255, 255, 255)");
    });
  } finally {
    await browser.close();
    lab.child.kill("SIGTERM");
  }
}

runTest(steps, "ak-settings-", run);
