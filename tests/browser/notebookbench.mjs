// How fast the agent's notebook edits show, in JupyterLab 4.6 with the
// extension and Chromium, the model being the scripted server (it answers
// at once): N prompts from the sidebar, each answered with one
// notebook_insert_cell. Printed as p50 and p90 (ms), never asserted:
//
//   tool → DOM     the model's answer with the tool call ended (the
//                  scripted server's clock) to the cell's text in the
//                  page's DOM (a MutationObserver): the goal is 50 ms
//   tool → paint   the same, to the next frame after it
//   tool → comm    the kernel's part: the answer ended to the kernel
//                  sending the insert (its message's header.date)
//   comm → DOM     the rest: the Jupyter server, the page, the render
//   page apply     the page got the request to the cell in the model
//                  (the extension's own work on the shared model)
//   send → DOM     Send clicked to the cell in the DOM: the whole loop, the
//                  kernel's turn and the model's instant answer included
//
// The clocks (the server's, the kernel's, the page's Date.now) are the
// same machine's. And notebook_read of a 2,000-cell notebook (2,000
// characters of output each): the extension's share in the page, and the
// whole from the model's call to the result reaching it (bridge's
// BenchmarkNotebookCommRead is the kernel's share; the goal is 30 ms).
//
//   make bench-notebook                  (N=40 by default)
// Environment: as notebook.test.mjs (LAB_PYTHON, AGENTKERNEL_BIN,
// SCRIPTED_BIN, LAB_EXTENSION); N.
import { join } from "node:path";
import {
  Steps, TIMEOUT, attached, browse, call, cellWith, cells, commOpen, kernelIdle, labWorld, runTest, say, send, startJupyter,
  turnDone, writeNotebook,
} from "./jupyterkit.mjs";

const N = Number(process.env.N || 40);
const steps = new Steps("notebookbench");
const log = (...a) => steps.log(...a);

/** p50 and p90 of xs, as text. */
function percentiles(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const at = (q) => s[Math.min(s.length - 1, Math.floor(s.length * q))];
  const ms = (x) => x.toFixed(x < 1 ? 2 : 1); // a read in the page is well under 1 ms
  return `p50 ${ms(at(0.5))} ms, p90 ${ms(at(0.9))} ms (n=${s.length})`;
}

/**
 * Watches the notebook shown in page: the notebook comm's requests (when
 * sent, when received, when applied) and the DOM, where each cell whose
 * text starts with "bench_" is stamped when it appears and at the frame
 * after. window.__bench[marker] has the times (epoch ms).
 */
async function watch(page) {
  await page.evaluate(() => {
    const panel = window.jupyterapp.shell.currentWidget;
    const kernel = panel.sessionContext.session.kernel;
    const comm = [...kernel._comms.values()].find((c) => c.targetName === "agentkernel.notebook" && !c.isDisposed);
    const bench = (window.__bench = {});
    const mark = (marker) => (bench[marker] = bench[marker] || {});
    const handle = comm.onMsg;
    comm.onMsg = (msg) => {
      const received = performance.now();
      const req = msg.content.data && msg.content.data.request;
      const m = req && req.op === "insert" && /^# (bench_\d+)/.exec(String(req.args && req.args.source));
      const r = handle(msg);
      if (m) Object.assign(mark(m[1]), { sent: Date.parse(msg.header.date), apply: performance.now() - received });
      return r;
    };
    new MutationObserver(() => {
      const now = Date.now();
      for (const line of panel.content.node.querySelectorAll(".cm-line")) {
        const m = /^# (bench_\d+)$/.exec(line.textContent);
        if (m && !(bench[m[1]] && bench[m[1]].dom)) {
          mark(m[1]).dom = now;
          requestAnimationFrame(() => { mark(m[1]).paint = Date.now(); });
        }
      }
    }).observe(panel.content.node, { childList: true, subtree: true, characterData: true });
  });
}

async function run(tmp) {
  const { model, env, work } = await labWorld(tmp);
  writeNotebook(join(work, "bench.ipynb"), "agent-code", "Agent (code)");
  const big = Array.from({ length: 2000 }, (_, i) => ({
    id: "big" + i, cell_type: "code", metadata: {}, source: `v${i} = ${i}  # cell ${i}`,
    outputs: [{ output_type: "stream", name: "stdout", text: "x".repeat(1999) + "\n" }], execution_count: i + 1,
  }));
  writeNotebook(join(work, "big.ipynb"), "agent-code", "Agent (code)", big);
  const lab = await startJupyter({ python: process.env.LAB_PYTHON, app: "jupyterlab", tmp, env,
    args: ["--LabApp.expose_app_in_browser=True"] });
  const browser = await browse(tmp);
  try {
    const page = await browser.newPage();
    steps.page = page;
    await steps.step(`${N} inserts, each from a prompt in the sidebar`, async () => {
      await page.goto(`${lab.base}/lab/tree/bench.ipynb?token=${lab.token}`);
      await cells(page).first().waitFor({ timeout: TIMEOUT });
      await kernelIdle(lab, "bench.ipynb");
      await commOpen(page);
      await attached(page);
      await watch(page);
      const loop = [];
      for (let i = 0; i < N; i++) {
        const marker = "bench_" + i;
        await model.enqueue(call("notebook_insert_cell", { source: "# " + marker, index: 0 }), say("Inserted."));
        const asked = (await model.requests()).length;
        const clicked = await page.evaluate(() => Date.now());
        await send(page, "Insert " + marker);
        await cellWith(page, "# " + marker).waitFor({ timeout: TIMEOUT });
        await turnDone(page, model);
        const t = await page.evaluate((m) => window.__bench[m], marker);
        loop.push({ ...t, clicked, tool: (await model.requests())[asked].done });
      }
      // The first few warm up (the page's code, the kernel's store).
      const xs = loop.slice(Math.min(5, Math.floor(N / 4))).filter((t) => t.dom && t.sent && t.tool);
      log("tool → DOM:  ", percentiles(xs.map((t) => t.dom - t.tool)));
      log("tool → paint:", percentiles(xs.map((t) => t.paint - t.tool)));
      log("tool → comm: ", percentiles(xs.map((t) => t.sent - t.tool)));
      log("comm → DOM:  ", percentiles(xs.map((t) => t.dom - t.sent)));
      log("page apply:  ", percentiles(xs.map((t) => t.apply)));
      log("send → DOM:  ", percentiles(xs.map((t) => t.dom - t.clicked)));
    });

    await steps.step("notebook_read of a 2,000-cell notebook: the page's share, and the whole", async () => {
      await page.goto(`${lab.base}/lab/tree/big.ipynb?token=${lab.token}`);
      await cells(page).first().waitFor({ timeout: TIMEOUT });
      await kernelIdle(lab, "big.ipynb");
      await commOpen(page);
      const times = await page.evaluate((n) => {
        const panel = window.jupyterapp.shell.currentWidget;
        const kernel = panel.sessionContext.session.kernel;
        const comm = [...kernel._comms.values()].find((c) => c.targetName === "agentkernel.notebook" && !c.isDisposed);
        const out = [];
        // The reply as the page sends it (serialised), not sent.
        comm.send = (data) => { JSON.stringify(data); return { dispose() {} }; };
        // A read takes less than the page's timer resolution (0.1 ms in
        // Chromium): each sample is the mean of a batch.
        const batch = 50;
        try {
          for (let i = 0; i < n; i++) {
            const t0 = performance.now();
            for (let j = 0; j < batch; j++) {
              comm.onMsg({ content: { comm_id: comm.commId, data: { request: { id: `r${i}-${j}`, op: "read", args: { max_output: 4000, max_chars: 32000 } } } } });
            }
            out.push((performance.now() - t0) / batch);
          }
        } finally {
          delete comm.send;
        }
        return out;
      }, 20);
      log("2,000-cell read in the page (model to JSON):", percentiles(times.slice(5)));

      // The whole read: the model's answer with the call ended to the
      // next request, which carries the result, arriving.
      await attached(page);
      // How many of the reads the page is asked for (with the kernel's
      // mirror of the notebook, none: the kernel answers them itself).
      await page.evaluate(() => {
        const panel = window.jupyterapp.shell.currentWidget;
        const kernel = panel.sessionContext.session.kernel;
        const comm = [...kernel._comms.values()].find((c) => c.targetName === "agentkernel.notebook" && !c.isDisposed);
        window.__pageReads = 0;
        const handle = comm.onMsg;
        comm.onMsg = (msg) => {
          const req = msg.content.data && msg.content.data.request;
          if (req && req.op === "read") window.__pageReads++;
          return handle(msg);
        };
      });
      const reads = [];
      for (let i = 0; i < 12; i++) {
        const asked = (await model.requests()).length;
        await model.enqueue(call("notebook_read", {}), say("Read."));
        await send(page, "Read it " + i);
        await turnDone(page, model);
        const reqs = await model.requests();
        reads.push(reqs[asked + 1].received - reqs[asked].done);
      }
      log("2,000-cell notebook_read, tool call to result (the kernel, the Jupyter server, the page):", percentiles(reads.slice(2)),
        `; the page was asked for ${await page.evaluate(() => window.__pageReads)} reads`);
    });
  } finally {
    await browser.close();
  }
}

runTest(steps, "ak-nbbench-", run);
