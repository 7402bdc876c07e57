// Browser test of the notebook tools under real-time collaboration:
// JupyterLab 4.6 with jupyter-collaboration 5.0 from PyPI (every page on a
// notebook shares one document on the server), two pages on one notebook.
// The agent, prompted from page A's sidebar, inserts a cell and edits it
// through page A's notebook comm; page B shows both live, without a reload,
// and what B types meanwhile in another cell is kept; the server saves the
// document with the agent's cell. Run by run.sh.
//
// Environment: LAB_PYTHON (a python with jupyterlab and
// jupyter-collaboration: scripts/modern-venv.sh collab), AGENTKERNEL_BIN,
// SCRIPTED_BIN, LAB_EXTENSION.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import assert from "node:assert/strict";
import {
  Steps, TIMEOUT, attached, browse, call, cellWith, cells, commOpen, kernelIdle, labWorld, runTest, say, send, setting, startJupyter,
  turnDone, until, writeNotebook,
} from "./jupyterkit.mjs";

const steps = new Steps("collab");
const step = (name, fn) => steps.step(name, fn);
const log = (...a) => steps.log(...a);

/** Whether page's notebook is a collaborative document (shared through the server). */
const collaborative = (page) => page.evaluate(() => window.jupyterapp.shell.currentWidget.context.model.collaborative);

async function run(tmp) {
  setting(tmp, "@agentkernel/jupyterlab:plugin", { autoOpen: false });
  const { model, env, work } = await labWorld(tmp);
  const code = (id, source) => ({ id, cell_type: "code", metadata: {}, source, outputs: [], execution_count: null });
  writeNotebook(join(work, "collab.ipynb"), "agent-code", "Agent (code)", [code("first", "a = 1"), code("b-types-here", "")]);

  const python = process.env.LAB_PYTHON;
  execFileSync(python, ["-c", "import jupyter_collaboration"]); // the suite means nothing without it
  const lab = await startJupyter({ python, app: "jupyterlab", tmp, env, args: ["--LabApp.expose_app_in_browser=True"] });
  const browser = await browse(tmp);
  try {
    const [a, b] = [await browser.newPage(), await browser.newPage()];
    steps.page = a;
    for (const p of [a, b]) p.on("pageerror", (e) => log("page error:", e.message));

    await step("two pages on collab.ipynb are one collaborative document, on one kernel", async () => {
      for (const p of [a, b]) {
        await p.goto(`${lab.base}/lab/tree/collab.ipynb?token=${lab.token}`);
        await cells(p).first().waitFor({ timeout: TIMEOUT });
      }
      await kernelIdle(lab, "collab.ipynb");
      for (const p of [a, b]) {
        await commOpen(p);
        assert.equal(await collaborative(p), true, "the notebook is not a collaborative document");
      }
      const sessions = await (await fetch(`${lab.base}/api/sessions?token=${lab.token}`)).json();
      assert.equal(sessions.filter((x) => x.path.endsWith("collab.ipynb")).length, 1, "the pages are not on one kernel");
    });

    await step("a prompt from page A inserts a cell: page B shows it live", async () => {
      await a.keyboard.press("Control+Shift+Y");
      await attached(a);
      await model.enqueue(call("notebook_insert_cell", { source: "from_the_agent = 1", index: 1 }), say("Inserted it."));
      await send(a, "Insert a cell");
      await cellWith(a, "from_the_agent = 1").waitFor({ timeout: TIMEOUT });
      await cellWith(b, "from_the_agent = 1").waitFor({ timeout: TIMEOUT });
      assert.equal(await cells(b).count(), 3);
      await turnDone(a, model);
    });

    await step("the agent edits its cell while page B types in another: B sees the edit live, and B's text is kept", async () => {
      const id = await a.evaluate(() => window.jupyterapp.shell.currentWidget.content.model.sharedModel.cells[1].id);
      const typed = "typed_by_b = 2";
      await cells(b).last().locator(".cm-content").click();
      await b.keyboard.type(typed.slice(0, 6));
      await model.enqueue(call("notebook_edit_cell", { id, source: "from_the_agent = 2" }), say("Changed it."));
      await send(a, "Make it 2");
      await b.keyboard.type(typed.slice(6));
      await cellWith(b, "from_the_agent = 2").waitFor({ timeout: TIMEOUT });
      await turnDone(a, model);
      for (const p of [a, b]) await cellWith(p, typed).waitFor({ timeout: TIMEOUT });
      assert.equal(await cellWith(a, "from_the_agent = 1").count(), 0);
    });

    await step("the server saves the document with the agent's cell and B's text (valid nbformat)", async () => {
      const path = join(work, "collab.ipynb");
      const src = (c) => [].concat(c.source).join("");
      await until("the document saved", () => {
        const nb = JSON.parse(readFileSync(path, "utf8"));
        return nb.cells.some((c) => src(c) === "from_the_agent = 2") && nb.cells.some((c) => src(c) === "typed_by_b = 2");
      });
      execFileSync(python, ["-c", "import nbformat, sys; nbformat.validate(nbformat.read(sys.argv[1], as_version=4))", path]);
    });
  } finally {
    await browser.close();
  }
}

runTest(steps, "ak-collab-", run);
