// What the JupyterLab browser tests share (lab.test.mjs, complete.test.mjs):
// the processes they start (each in its own process group, all stopped by
// stopAll, failed or not), the scripted model, a Jupyter server from
// LAB_PYTHON's venv in a temporary home, and the steps' reporting.
//
// Environment: LAB_PYTHON (a python with jupyterlab and notebook 7),
// AGENTKERNEL_BIN, SCRIPTED_BIN (scripts/scriptedmodel built), LAB_EXTENSION
// (the built labextension directory), CHROMIUM (default /usr/bin/chromium).
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { mkdirSync, writeFileSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { createServer } from "node:net";
import assert from "node:assert/strict";

const here = dirname(fileURLToPath(import.meta.url));
export const repo = join(here, "..", "..");
export const artifacts = join(repo, "tests", "artifacts");
mkdirSync(artifacts, { recursive: true });
export const TIMEOUT = 60000;
export const CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
  "--disable-component-update", "--disable-sync"];
export const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";

// ---- processes ----

const children = [];

// start spawns a process in a group of its own, which stopAll ends.
export function start(cmd, args, opts) {
  const child = spawn(cmd, args, { ...opts, detached: true });
  children.push(child);
  return child;
}

// stopAll ends every process group start made that is still running (a
// Jupyter server with its kernels, the scripted model).
export function stopAll() {
  for (const c of children) {
    if (c.exitCode === null && c.signalCode === null) {
      try { process.kill(-c.pid, "SIGTERM"); } catch (e) { /* gone */ }
    }
  }
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => { const p = s.address().port; s.close(() => resolve(p)); });
    s.on("error", reject);
  });
}

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

// ---- the scripted model ----

// model is the scripted model server (startModel): its child and base URL.
export let model;
export async function startModel() {
  const child = start(process.env.SCRIPTED_BIN, [], { stdio: ["pipe", "pipe", "inherit"] });
  const rl = createInterface({ input: child.stdout });
  const url = await new Promise((resolve) => rl.once("line", resolve));
  model = { child, url };
  return model;
}
export async function enqueue(...turns) {
  const r = await fetch(model.url + "/_enqueue", { method: "POST", body: JSON.stringify(turns) });
  assert.ok(r.ok, "enqueue " + r.status);
}
export const pending = async () => Number(await (await fetch(model.url + "/_pending")).text());
// requests are the requests the model received: {n, path, body, key}.
export const requests = async () => (await (await fetch(model.url + "/_requests")).json()) || [];

// ---- the Jupyter server ----

// jupyterEnv is the environment of a Jupyter server in tmp: its own home,
// paths and agentkernel data, the scripted model with a key; extra's
// entries replace those (undefined removes one).
export function jupyterEnv(tmp, extra = {}) {
  const env = {
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
    ...extra,
  };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
  return env;
}

// startJupyter starts app (jupyterlab, notebook) of LAB_PYTHON on a free
// port with a random token, its stderr (the kernels' too) kept.
export async function startJupyter(app, tmp, baseURL = "/", env = jupyterEnv(tmp)) {
  const port = await freePort();
  const token = "t" + Math.random().toString(16).slice(2) + Math.random().toString(16).slice(2);
  const child = start(process.env.LAB_PYTHON, ["-m", app, "--no-browser", "--ip=127.0.0.1", `--port=${port}`,
    `--IdentityProvider.token=${token}`, `--ServerApp.root_dir=${join(tmp, "work")}`, "--ServerApp.open_browser=False",
    `--ServerApp.base_url=${baseURL}`,
    ...(process.getuid() === 0 ? ["--allow-root"] : [])], {
    stdio: ["ignore", "ignore", "pipe"], env,
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

// notebook writes a notebook of one empty code cell on kernel.
export function notebook(path, kernel, display) {
  writeFileSync(path, JSON.stringify({
    cells: [{ cell_type: "code", metadata: {}, source: "", outputs: [], execution_count: null }],
    metadata: { kernelspec: { name: kernel, display_name: display, language: "markdown" } },
    nbformat: 4, nbformat_minor: 5,
  }));
}

// ---- the page ----

// Steps reports a test's steps under a name (lab, complete); a failed step
// leaves a screenshot of the page it was on.
export class Steps {
  constructor(name) {
    this.name = name;
    this.results = [];
    this.page = null; // shown in a screenshot when a step fails
  }

  log(...a) { console.log(`[${this.name}]`, ...a); }

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
    await page.screenshot({ path: join(artifacts, this.name + "-" + name + ".png") });
  }

  // exit reports the steps and ends the process: 0 when main resolved.
  exit(main) {
    main.then(() => {
      this.log(`${this.results.filter((r) => r.ok).length}/${this.results.length} passed`);
      process.exit(0);
    }, (e) => {
      console.error(e);
      this.log(`${this.results.filter((r) => r.ok).length}/${this.results.length} passed before a failure`);
      stopAll();
      process.exit(1);
    });
  }
}

// sidebar is the panel page inside the sidebar's iframe.
export const sidebar = (page) => page.frameLocator("#agentkernel-sidebar iframe");

// runCell types text into the notebook's last cell and runs it.
export async function runCell(page, text) {
  const cells = page.locator(".jp-Notebook .jp-Cell");
  const cell = cells.last();
  await cell.locator(".cm-content").click();
  await page.keyboard.type(text);
  await page.keyboard.press("Shift+Enter");
}

// attached waits for the sidebar to be shown and to speak with the kernel.
export async function attached(page) {
  await page.locator("#agentkernel-sidebar iframe").waitFor({ state: "visible", timeout: TIMEOUT });
  await sidebar(page).locator("#status").filter({ hasText: /idle/ }).waitFor({ timeout: TIMEOUT });
}
