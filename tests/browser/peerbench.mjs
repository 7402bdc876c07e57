// agentkernel's notebook tools beside jupyter-mcp-server's, in one
// JupyterLab 4.6 with jupyter-collaboration (the venv of
// tests/python/requirements-peer.txt, where jupyter-mcp-server is a
// Jupyter server extension), through one MCP client (Python's `mcp` SDK:
// scripts/peerbench/client.py): read a 2,001-cell notebook (2,000
// characters of output in each of 2,000 cells), insert a cell, run it,
// edit it; p50 and p90 of each, the two servers taking turns call by call;
// and each insert from its call to its cell in the page's DOM. Printed,
// never asserted.
//
// Each has a notebook of its own, the same cells, in a folder of its own
// (a kernel starts in its notebook's folder, and our tool calls checkpoint
// the files there: not the other's notebook, which changes at every step):
// ours/ours.ipynb on the Agent (code) kernel, open in a Chromium page (our
// tools act through the page's notebook comm; a cell `%agent mcp serve`
// gives the kernel's MCP server's URL and token), and peer/peer.ipynb on
// python3, open in a page too (the jupyter-collaboration document theirs
// edit is the page's). Both kernels run the venv's ipykernel: it is the
// python3 kernelspec of the server and agentkernel's backing kernel.
//
//   make bench-peer                  (N=15 rounds by default)
// Environment: LAB_PYTHON (the peer venv's python), AGENTKERNEL_BIN,
// SCRIPTED_BIN, LAB_EXTENSION, as the other browser scripts; N; CELLS
// (default 2000: CELLS=0 times the edits on a notebook of one cell);
// BASELINE_BIN: an older agentkernel, measured beside AGENTKERNEL_BIN on a
// third notebook (its own kernelspec, agent-baseline).
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import {
  Steps, TIMEOUT, browse, cells, commOpen, kernelIdle, labWorld, repo, runTest, setting, start, startJupyter, until,
  writeNotebook,
} from "./jupyterkit.mjs";

const N = Number(process.env.N || 15);
const CELLS = Number(process.env.CELLS ?? 2000);
const steps = new Steps("peerbench");

/** The notebook of the benchmark: an empty cell (where ours serves), then CELLS with 2,000 characters of output. */
function bigCells() {
  return [
    { id: "serve", cell_type: "code", metadata: {}, source: "", outputs: [], execution_count: null },
    ...Array.from({ length: CELLS }, (_, i) => ({
      id: "big" + i, cell_type: "code", metadata: {}, source: `v${i} = ${i}  # cell ${i}`,
      outputs: [{ output_type: "stream", name: "stdout", text: "x".repeat(1999) + "\n" }], execution_count: i + 1,
    })),
  ];
}

/** Writes who/who.ipynb under work on kernelspec kernel: its path. */
function notebook(work, who, kernel, display) {
  mkdirSync(join(work, who));
  writeNotebook(join(work, who, who + ".ipynb"), kernel, display, bigCells());
  return who + "/" + who + ".ipynb";
}

/** Opens notebook path in a page of its own (a workspace of its own, so no page restores another's tabs). */
async function open(browser, lab, path) {
  const page = await browser.newPage();
  page.on("pageerror", (e) => steps.log(path + ": page error:", e.message));
  const ws = path.replace(/\/.*/, "");
  await page.goto(`${lab.base}/lab/workspaces/${ws}/tree/${path}?reset&token=${lab.token}`);
  await cells(page).first().waitFor({ timeout: TIMEOUT });
  await kernelIdle(lab, path);
  return page;
}

/**
 * Watches the notebook shown in page: each cell line "x = i  # insert i"
 * is stamped (Date.now) when it first appears in the DOM, in
 * window.__shown[i].
 */
async function watch(page) {
  await page.evaluate(() => {
    const root = window.jupyterapp.shell.currentWidget.content.node;
    const shown = (window.__shown = {});
    const look = (node) => {
      const line = node && (node.nodeType === 1 ? node : node.parentElement);
      for (const l of line ? [line.closest(".cm-line"), ...line.querySelectorAll(".cm-line")] : []) {
        const m = l && /^x = \d+  # insert (\d+)$/.exec(l.textContent);
        if (m && !(m[1] in shown)) shown[m[1]] = Date.now();
      }
    };
    new MutationObserver((records) => {
      for (const r of records) {
        if (r.type === "characterData") look(r.target);
        else for (const n of r.addedNodes) look(n);
      }
    }).observe(root, { childList: true, subtree: true, characterData: true });
  });
}

/** p50 and p90 of xs (ms), as text. */
function percentiles(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const at = (q) => s[Math.min(s.length - 1, Math.floor(s.length * q))];
  return `${at(0.5).toFixed(1).padStart(8)} / ${at(0.9).toFixed(1).padStart(7)}`;
}

/** Runs `%agent mcp serve` in the notebook's first cell: the server's {url, token}. */
async function serve(page) {
  await commOpen(page);
  const cell = cells(page).first();
  await cell.locator(".cm-content").click();
  await page.keyboard.insertText("%agent mcp serve");
  await page.keyboard.press("Control+Enter");
  const out = cell.locator(".jp-OutputArea-output", { hasText: "token:" });
  await out.waitFor({ timeout: TIMEOUT });
  const text = await out.innerText();
  const m = /URL: (http:\/\/127\.0\.0\.1:\d+\/mcp)\s+token: ([0-9a-f]+)/.exec(text);
  if (!m) throw new Error("no URL and token in the cell's output: " + text);
  return { url: m[1], token: m[2] };
}

async function run(tmp) {
  const { env, work } = await labWorld(tmp);
  setting(tmp, "@agentkernel/jupyterlab:plugin", { autoOpen: false });
  // The MCP clients' calls are not asked about (the decisions are still made and stored).
  env.AGENTKERNEL_PERMISSION_MODE = "bypassPermissions";
  const prefix = join(tmp, "prefix");
  // The venv's ipykernel as python3, for the server and for agentkernel's backing kernel alike.
  execFileSync(process.env.LAB_PYTHON, ["-m", "ipykernel", "install", "--prefix", prefix, "--name", "python3"], { env, stdio: "ignore" });
  const oursPath = notebook(work, "ours", "agent-code", "Agent (code)");
  const peerPath = notebook(work, "peer", "python3", "Python 3");
  let basePath;
  if (process.env.BASELINE_BIN) {
    execFileSync(process.env.BASELINE_BIN, ["install", "--prefix", prefix, "--probe=false", "--name", "agent-baseline", "--mode", "code"], { env, stdio: "ignore" });
    basePath = notebook(work, "baseline", "agent-baseline", "Agent (baseline)");
  }
  const lab = await startJupyter({ python: process.env.LAB_PYTHON, app: "jupyterlab", tmp, env,
    args: ["--LabApp.expose_app_in_browser=True", "--JupyterMCPServerExtensionApp.document_id=" + peerPath] });
  const browser = await browse(tmp);
  try {
    let ours, base;
    const pages = {}; // by the client's name for each side
    await steps.step("the notebooks open in JupyterLab, ours serving its kernel over MCP", async () => {
      pages.ours = await open(browser, lab, oursPath);
      steps.page = pages.ours;
      ours = await serve(pages.ours);
      if (basePath) base = await serve((pages.baseline = await open(browser, lab, basePath)));
      pages.peer = await open(browser, lab, peerPath);
      for (const page of Object.values(pages)) await watch(page);
      await until("jupyter-mcp-server to answer", async () => (await fetch(`${lab.base}/mcp/healthz?token=${lab.token}`)).ok);
    });

    await steps.step(`${N} rounds of read, insert, run, edit on each, alternating, on ${CELLS + 1}-cell notebooks (scripts/peerbench/client.py)`, async () => {
      const client = start(process.env.LAB_PYTHON, [join(repo, "scripts", "peerbench", "client.py")], {
        stdio: ["ignore", "pipe", "pipe"],
        env: {
          ...process.env, N: String(N), OURS_URL: ours.url, OURS_TOKEN: ours.token,
          PEER_URL: `${lab.base}/mcp`, PEER_TOKEN: lab.token, PEER_NOTEBOOK: peerPath,
          ...(base ? { BASE_URL: base.url, BASE_TOKEN: base.token } : {}),
          INSERTS_FILE: join(tmp, "inserts.json"),
        },
      });
      let out = "";
      client.stdout.on("data", (b) => { out += b; });
      client.stderr.on("data", (b) => process.stderr.write(b));
      const code = await new Promise((resolve) => client.on("exit", (c) => resolve(c)));
      if (code !== 0) throw new Error(`the client exited ${code} (its stderr is above); the Jupyter server's last words:\n${lab.stderr().slice(-3000)}`);
      console.log("\n" + out);
      // The insert as a person sees it: the call made to its cell's line
      // in the page's DOM (the same machine's clock).
      const called = JSON.parse(readFileSync(join(tmp, "inserts.json"), "utf8"));
      console.log("insert → in the page (the call made to the cell's line in the DOM), p50 / p90 (ms):");
      for (const [name, page] of Object.entries(pages)) {
        const shown = await page.evaluate(() => window.__shown);
        const xs = Object.entries(called[name]).filter(([i]) => Number(i) >= called.warm && shown[i]).map(([i, t]) => shown[i] - t);
        const n = await page.evaluate(() => window.jupyterapp.shell.currentWidget.content.model.cells.length);
        console.log(`  ${name.padEnd(9)} ${xs.length ? percentiles(xs) : "—"}   (${xs.length} of ${N} seen; the page has ${n} cells)`);
      }
    });
  } finally {
    await browser.close();
  }
}

runTest(steps, "ak-peerbench-", run);
