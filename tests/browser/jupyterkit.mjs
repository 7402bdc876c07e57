// What the JupyterLab / Notebook 7 browser tests share (lab.test.mjs,
// notebook.test.mjs, complete.test.mjs; screenshots.mjs too): the
// processes they start and stop, the scripted model, a Jupyter server of
// LAB_PYTHON's, its user settings, the steps and their screenshots, and the
// page's Agent sidebar and notebook comm. Every process started with
// start() is stopped by stopAll(), which a test calls however it ends.
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { createServer } from "node:net";
import { chromium } from "playwright-core";

const here = dirname(fileURLToPath(import.meta.url));
export const repo = join(here, "..", "..");
export const artifacts = join(repo, "tests", "artifacts");
mkdirSync(artifacts, { recursive: true });

export const TIMEOUT = 60000;
export const CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
  "--disable-component-update", "--disable-sync"];

// ---- processes ----

const children = [];

/** Starts a process in a group of its own, stopped by stopAll. */
export function start(cmd, args, opts) {
  const child = spawn(cmd, args, { ...opts, detached: true });
  children.push(child);
  return child;
}

/** Stops (SIGTERM to its group) every process start started that still runs. */
export function stopAll() {
  for (const c of children) {
    if (c.exitCode === null && c.signalCode === null) {
      try { process.kill(-c.pid, "SIGTERM"); } catch (e) { /* gone */ }
    }
  }
}

/**
 * Runs a test: run(tmp) in a fresh temporary directory; then, passed,
 * failed or interrupted (SIGINT, SIGTERM), every process start started is
 * stopped and the directory removed, and the process exits (0: passed)
 * after the steps' summary.
 */
export function runTest(steps, prefix, run) {
  const tmp = mkdtempSync(join(tmpdir(), prefix));
  const end = (code) => {
    stopAll();
    rmSync(tmp, { recursive: true, force: true });
    steps.summary(code !== 0);
    process.exit(code);
  };
  for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => { steps.log("interrupted:", sig); end(1); });
  run(tmp).then(() => end(0), (e) => { console.error(e); end(1); });
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => { const p = s.address().port; s.close(() => resolve(p)); });
    s.on("error", reject);
  });
}

/** Polls fn every 100 ms until it returns something truthy, which it returns. */
export async function until(what, fn, timeout = TIMEOUT) {
  const end = Date.now() + timeout;
  let last;
  while (Date.now() < end) {
    try { last = await fn(); } catch (e) { last = undefined; }
    if (last) return last;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("timed out waiting for " + what);
}

// ---- the scripted model (scripts/scriptedmodel, SCRIPTED_BIN) ----

/** Starts the scripted model: {url, enqueue(...turns), pending(), requests()}. */
export async function startModel() {
  const child = start(process.env.SCRIPTED_BIN, [], { stdio: ["pipe", "pipe", "inherit"] });
  const rl = createInterface({ input: child.stdout });
  const url = await new Promise((resolve) => rl.once("line", resolve));
  return {
    child, url,
    async enqueue(...turns) {
      const r = await fetch(url + "/_enqueue", { method: "POST", body: JSON.stringify(turns) });
      if (!r.ok) throw new Error("enqueue: " + r.status + " " + await r.text());
    },
    pending: async () => Number(await (await fetch(url + "/_pending")).text()),
    requests: async () => (await (await fetch(url + "/_requests")).json()) || [],
  };
}

/** A turn of the scripted model that calls tool with input. */
let callN = 0;
export const call = (tool, input) => ({ steps: [{ toolCall: { id: "t" + ++callN, name: tool, args: [JSON.stringify(input)] } }] });
/** A turn of the scripted model that answers text. */
export const say = (text) => ({ steps: [{ text: [text] }] });

// ---- the Jupyter server ----

/** The environment of a Jupyter server (and its kernels) in tmp, on model. */
export function jupyterEnv(tmp, model) {
  return {
    ...process.env,
    HOME: join(tmp, "home"),
    JUPYTER_PATH: join(tmp, "prefix", "share", "jupyter"),
    JUPYTER_CONFIG_DIR: join(tmp, "config"),
    JUPYTER_RUNTIME_DIR: join(tmp, "runtime"),
    JUPYTER_DATA_DIR: join(tmp, "data"),
    AGENTKERNEL_MODEL: "openai:gpt-4.1",
    OPENAI_BASE_URL: model.url + "/v1",
    OPENAI_API_KEY: "sk-lab-test-not-real",
    AGENTKERNEL_DATA_DIR: join(tmp, "agent-data"),
    AGENTKERNEL_CONFIG: join(tmp, "none.json"),
    PYDEVD_DISABLE_FILE_VALIDATION: "1",
  };
}

/**
 * Starts `python -m app` (jupyterlab or notebook) serving tmp/work:
 * {child, base, token, stderr()}.
 */
export async function startJupyter({ python, app, tmp, env, baseURL = "/", args = [] }) {
  const port = await freePort();
  const token = "t" + Math.random().toString(16).slice(2) + Math.random().toString(16).slice(2);
  const child = start(python, ["-m", app, "--no-browser", "--ip=127.0.0.1", `--port=${port}`,
    `--IdentityProvider.token=${token}`, `--ServerApp.root_dir=${join(tmp, "work")}`, "--ServerApp.open_browser=False",
    `--ServerApp.base_url=${baseURL}`, ...args,
    ...(process.getuid() === 0 ? ["--allow-root"] : [])], {
    // In tmp: what a server writes where it runs (jupyter-collaboration's
    // .jupyter_ystore.db) goes with the test.
    stdio: ["ignore", "ignore", "pipe"], env, cwd: tmp,
  });
  let stderr = "";
  child.stderr.on("data", (b) => { stderr += b; });
  const base = `http://127.0.0.1:${port}${baseURL.replace(/\/$/, "")}`;
  await until(app + " to listen", async () => {
    if (child.exitCode !== null) throw new Error(app + " exited: " + stderr);
    const r = await fetch(`${base}/api?token=${token}`);
    return r.ok;
  });
  return { child, base, token, stderr: () => stderr };
}

/** Waits until the kernel of notebook name on server is up and idle. */
export async function kernelIdle(server, name) {
  await until(name + "'s kernel to be up", async () => {
    const r = await fetch(`${server.base}/api/sessions?token=${server.token}`);
    const ss = await r.json();
    return ss.some((x) => x.path.endsWith(name) && x.kernel && x.kernel.execution_state === "idle");
  });
}

/**
 * The Jupyter world of a test in tmp: its directories, no news, no inline
 * completions (a request sent while a cell is typed would take a turn
 * queued for the agent), the scripted model, the agent's kernelspecs
 * (AGENTKERNEL_BIN) and the extension (LAB_EXTENSION) in tmp/prefix:
 * {model, env, work}.
 */
export async function labWorld(tmp) {
  for (const d of ["work", "home", "config", "runtime", "data", "agent-data"]) mkdirSync(join(tmp, d), { recursive: true });
  setting(tmp, "@jupyterlab/apputils-extension:notification", { fetchNews: "false" });
  setting(tmp, "@agentkernel/jupyterlab:completer", { inlineCompletions: false });
  const model = await startModel();
  const env = jupyterEnv(tmp, model);
  const prefix = join(tmp, "prefix");
  execFileSync(process.env.AGENTKERNEL_BIN, ["install", "--prefix", prefix, "--probe=false"], { env, stdio: "ignore" });
  cpSync(process.env.LAB_EXTENSION, join(prefix, "share", "jupyter", "labextensions", "@agentkernel", "jupyterlab"), { recursive: true });
  return { model, env, work: join(tmp, "work") };
}

/** Writes a user setting of a plugin under tmp/config (JupyterLab and Notebook 7 read the same files). */
export function setting(tmp, plugin, values) {
  const [pkg, name] = plugin.split(":");
  const dir = join(tmp, "config", "lab", "user-settings", pkg);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, name + ".jupyterlab-settings"), JSON.stringify(values));
}

/** Writes a notebook on kernelspec kernel: cells (nbformat 4.5, with ids), else one empty code cell. */
export function writeNotebook(path, kernel, display, cells) {
  writeFileSync(path, JSON.stringify({
    cells: cells || [{ cell_type: "code", metadata: {}, source: "", outputs: [], execution_count: null }],
    metadata: { kernelspec: { name: kernel, display_name: display, language: "markdown" } },
    nbformat: 4, nbformat_minor: 5,
  }));
}

// ---- steps ----

/**
 * Steps of a test, logged with prefix; a failing step leaves a screenshot
 * of the current page (prefix-failed.png) and throws.
 */
export class Steps {
  constructor(prefix) {
    this.prefix = prefix;
    this.results = [];
    this.page = null; // the page shown when a step fails
  }

  log(...a) { console.log("[" + this.prefix + "]", ...a); }

  async step(name, fn) {
    const t0 = Date.now();
    try {
      await fn();
      this.results.push({ name, ok: true });
      this.log("ok  ", name, `(${Date.now() - t0} ms)`);
    } catch (e) {
      this.results.push({ name, ok: false });
      this.log("FAIL", name, "\n", e && e.stack || e);
      if (this.page) await this.shot(this.page, "failed").catch(() => {});
      throw e;
    }
  }

  async shot(page, name) {
    await page.screenshot({ path: join(artifacts, this.prefix + "-" + name + ".png") });
  }

  summary(failed) {
    const ok = this.results.filter((r) => r.ok).length;
    this.log(failed ? `${ok}/${this.results.length} passed before a failure` : `${ok}/${this.results.length} passed`);
  }
}

// ---- the page ----

/** Chromium (Debian's, or CHROMIUM) with a fresh profile under tmp. */
export async function browse(tmp) {
  const profile = mkdtempSync(join(tmp, "chromium-"));
  return chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium", headless: true, args: CHROMIUM_ARGS,
    viewport: { width: 1400, height: 900 },
  });
}

/** The notebook's cells in page. */
export const cells = (page) => page.locator(".jp-Notebook .jp-Cell");
/** The cell of the page whose text (source or output) has text. */
export const cellWith = (page, text) => cells(page).filter({ hasText: text });
/** The source of cell i as its editor shows it. */
export const sourceOf = async (page, i) => (await cells(page).nth(i).locator(".jp-InputArea-editor").innerText()).replace(/\u200b/g, "");

/** The panel page inside the Agent sidebar's iframe. */
export const sidebar = (page) => page.frameLocator("#agentkernel-sidebar iframe");

/** The Agent sidebar's tab in JupyterLab's right side bar. */
export const agentTab = (page) => page.locator('.jp-SideBar.jp-mod-right .lm-TabBar-tab[data-id="agentkernel-sidebar"]');

/** Closes the sidebar by its tab, as a person does. */
export async function collapse(page) {
  if (await page.locator("#agentkernel-sidebar").isVisible()) await agentTab(page).click();
  await page.locator("#agentkernel-sidebar").waitFor({ state: "hidden", timeout: TIMEOUT });
}

/** Waits for the sidebar to be shown and to speak with the kernel. */
export async function attached(page) {
  await page.locator("#agentkernel-sidebar iframe").waitFor({ state: "visible", timeout: TIMEOUT });
  await sidebar(page).locator("#status").filter({ hasText: /idle/ }).waitFor({ timeout: TIMEOUT });
}

/**
 * Waits until the notebook shown in page has its notebook comm open (the
 * app exposed: expose_app_in_browser). A prompt sent before the comm is
 * open finds no notebook to work in.
 */
export async function commOpen(page) {
  await until("the notebook comm to be open", () => page.evaluate(() => {
    const panel = window.jupyterapp && window.jupyterapp.shell.currentWidget;
    const k = panel && panel.sessionContext && panel.sessionContext.session && panel.sessionContext.session.kernel;
    return !!k && [...k._comms.values()].some((c) => c.targetName === "agentkernel.notebook" && !c.isDisposed);
  }));
}

/** Sends text from the sidebar's prompt box, by clicking Send. */
export async function send(page, text) {
  const sb = sidebar(page);
  const box = sb.locator("#prompt");
  await box.fill(text);
  // The panel empties the box as it sends. A click that left the text
  // there was not taken (seen once in CI: a sidebar just attached kept
  // "Insert a cell" and sent nothing), and is made again, as a user would.
  for (let tries = 1; ; tries++) {
    await sb.locator("#send").click();
    const taken = await box.evaluate((el) => new Promise((resolve) => {
      const t0 = Date.now();
      const check = () => (el.value === "" ? resolve(true) : Date.now() - t0 > 3000 ? resolve(false) : setTimeout(check, 50));
      check();
    }));
    if (taken) return;
    if (tries === 3) throw new Error(`the panel did not send ${JSON.stringify(text)}: the prompt box kept it after 3 clicks`);
  }
}

/** Waits for model to have served every queued turn and page's sidebar to be idle again. */
export async function turnDone(page, model) {
  await until("the model's turns to be served", async () => (await model.pending()) === 0);
  await sidebar(page).locator("#status").filter({ hasText: /idle/ }).waitFor({ timeout: TIMEOUT });
}

/** Types text into the notebook's last cell and runs it. */
export async function runCell(page, text) {
  const cell = page.locator(".jp-Notebook .jp-Cell").last();
  await cell.locator(".cm-content").click();
  await page.keyboard.type(text);
  await page.keyboard.press("Shift+Enter");
}

/**
 * Picks an item of Settings > Theme, as a person does: a theme (the menu
 * runs apputils:change-theme), or a font size.
 */
// settingsEntry opens Settings > Settings Editor, filters its list by a
// plugin's title and returns that plugin's entry (not clicked).
export async function settingsEntry(page, title) {
  await page.locator(".lm-MenuBar-itemLabel", { hasText: /^Settings$/ }).click();
  await page.locator(".lm-Menu-itemLabel", { hasText: /^Settings Editor$/ }).click();
  await page.locator(".jp-PluginList .jp-FilterBox input").fill(title);
  const entry = page.locator(".jp-PluginList-entry", { hasText: title });
  await entry.waitFor({ timeout: TIMEOUT });
  return entry;
}

export async function themeMenu(page, item) {
  await page.locator(".lm-MenuBar-itemLabel", { hasText: /^Settings$/ }).click();
  await page.locator(".lm-Menu-itemLabel", { hasText: /^Theme$/ }).hover();
  await page.locator(".lm-Menu-itemLabel", { hasText: new RegExp("^" + item + "$") }).click();
}
