// Browser test of the notebook tools under real-time collaboration:
// JupyterLab 4.6 with jupyter-collaboration 5.0 from PyPI (every page on a
// notebook shares one document on the server), two pages on one notebook.
// The agent, prompted from page A's sidebar, inserts a cell and edits it
// through page A's notebook comm; page B shows both live, without a reload,
// and what B types meanwhile in another cell is kept; the server saves the
// document with the agent's cell. Then jupyter-collaboration's document
// store (.jupyter_ystore.db, SQLite, beside the notebook as when `jupyter
// lab` runs in the notebooks' directory) is not part of the workspace the
// checkpoints keep (issue 41 item 12): with 2 MiB of history in it, 50
// notebook tool calls keep the session store under 20 MB (a copy a step
// would be over 100 MB), and a rewind from the sidebar turns the agent's
// cells back but leaves the store alone: the same file (inode), its
// updates all there and still growing, not named by the rewind's report.
// Run by run.sh.
//
// Environment: LAB_PYTHON (a python with jupyterlab and
// jupyter-collaboration: scripts/modern-venv.sh collab), AGENTKERNEL_BIN,
// SCRIPTED_BIN, LAB_EXTENSION.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import assert from "node:assert/strict";
import {
  Steps, TIMEOUT, attached, browse, call, cellWith, cells, commOpen, kernelIdle, labWorld, runTest, say, send, setting, sidebar, startJupyter,
  turnDone, until, writeNotebook,
} from "./jupyterkit.mjs";

const steps = new Steps("collab");
const step = (name, fn) => steps.step(name, fn);
const log = (...a) => steps.log(...a);

// The session store's bound over the 50 calls, and the history put in the
// document store first: one copy of it a step would pass the bound
// several times over.
const STORE_BOUND = 20e6;
const HISTORY = 2 << 20;

/** The size of the session store (agentkernel.db and its -wal, -shm) in the data directory dir. */
const storeSize = (dir) => readdirSync(dir).filter((f) => f.startsWith("agentkernel.db"))
  .reduce((n, f) => n + statSync(join(dir, f)).size, 0);

/** Whether page's notebook is a collaborative document (shared through the server). */
const collaborative = (page) => page.evaluate(() => window.jupyterapp.shell.currentWidget.context.model.collaborative);

async function run(tmp) {
  setting(tmp, "@agentkernel/jupyterlab:plugin", { autoOpen: false });
  const { model, env, work } = await labWorld(tmp);
  const code = (id, source) => ({ id, cell_type: "code", metadata: {}, source, outputs: [], execution_count: null });
  writeNotebook(join(work, "collab.ipynb"), "agent-code", "Agent (code)", [code("first", "a = 1"), code("b-types-here", "")]);

  const python = process.env.LAB_PYTHON;
  execFileSync(python, ["-c", "import jupyter_collaboration"]); // the suite means nothing without it
  // The document store in the notebook's directory, where `jupyter lab` run there puts it.
  const ystore = join(work, ".jupyter_ystore.db");
  const lab = await startJupyter({ python, app: "jupyterlab", tmp, env,
    args: ["--LabApp.expose_app_in_browser=True", `--SQLiteYStore.db_path=${ystore}`] });
  /** The number of updates the document store holds for the notebook (read-only, beside the server). */
  const updates = () => Number(execFileSync(python, ["-c",
    "import sqlite3, sys; db = sqlite3.connect('file:' + sys.argv[1] + '?mode=ro', uri=True); " +
    "print(db.execute('select count(*) from yupdates').fetchone()[0])", ystore], { encoding: "utf8" }));
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

    await step("jupyter-collaboration's document store sits beside the notebook, with 2 MiB of history", async () => {
      assert.ok(existsSync(ystore), "no .jupyter_ystore.db in the notebook's directory: the steps below would mean nothing");
      // History the document no longer shows (a value set, then deleted),
      // as a long-edited notebook's store holds: it stays in the store.
      const setHistory = (on) => a.evaluate(([on, n]) => {
        const cell = window.jupyterapp.shell.currentWidget.content.model.sharedModel.cells[0];
        if (on) cell.setMetadata("history", "x".repeat(n)); else cell.deleteMetadata("history");
      }, [on, HISTORY]);
      await setHistory(true);
      await until("the history in the document store", () => statSync(ystore).size > HISTORY);
      await setHistory(false);
      log("document store:", statSync(ystore).size, "bytes,", updates(), "updates");
    });

    const n = 10; // cells inserted, each edited 3 times and read: 50 notebook tool calls
    let before; // the document store before the rewind
    await step("50 notebook tool calls by the agent keep the session store under 20 MB", async () => {
      const data = env.AGENTKERNEL_DATA_DIR;
      assert.ok(existsSync(join(data, "agentkernel.db")), "no session store in " + data);
      const [store0, updates0] = [storeSize(data), updates()];
      // Two prompts of 25 calls each (a turn stops after 50 model requests).
      let calls = 0;
      for (const half of ["first", "last"]) {
        const turns = [];
        for (let i = half === "first" ? 0 : n / 2; i < (half === "first" ? n / 2 : n); i++) {
          const index = 3 + i;
          turns.push(call("notebook_insert_cell", { source: `agent_${i} = 0`, index }));
          for (let k = 1; k <= 3; k++) turns.push(call("notebook_edit_cell", { index, source: `agent_${i} = ${k}` }));
          turns.push(call("notebook_read", {}));
        }
        calls += turns.length;
        await model.enqueue(...turns, say("25 changes made."));
        await send(a, `Make the ${half} 25 changes`);
        await turnDone(a, model);
      }
      assert.equal(calls, 50);
      for (const p of [a, b]) await cellWith(p, `agent_${n - 1} = 3`).waitFor({ timeout: TIMEOUT });
      assert.equal(await cells(b).count(), 3 + n);
      const [store1, updates1, ysize] = [storeSize(data), updates(), statSync(ystore).size];
      log(`session store: ${store0} → ${store1} bytes over 50 calls; document store ${ysize} bytes, ${updates0} → ${updates1} updates`);
      assert.ok(updates1 > updates0 && ysize > HISTORY, "the calls did not change the document store: the bound means nothing");
      assert.ok(store1 < STORE_BOUND, `the session store is ${store1} bytes after 50 calls (bound ${STORE_BOUND}): the document store kept?`);
      const st = statSync(ystore);
      before = { ino: st.ino, size: st.size, mtimeMs: st.mtimeMs, updates: updates1 };
    });

    await step("a rewind from the sidebar turns the agent's cells back and leaves the document store alone", async () => {
      const sb = sidebar(a);
      const prompt = sb.locator("article.msg.user").filter({ hasText: "Make the first 25 changes" });
      await prompt.hover();
      await prompt.locator("button.rewind").click();
      // The conversation, the files and the cells, overwriting conflicts:
      // what the server wrote since would be overwritten if the store were kept.
      await sb.locator("#rwForce").check();
      await sb.locator("#rwDo").click();
      await sb.locator("#rwSummary").filter({ hasText: `${4 * n} cell changes turned back` }).waitFor({ timeout: TIMEOUT });
      for (const p of [a, b]) {
        await until("the agent's cells gone from a page", async () => (await cells(p).count()) === 3);
        await cellWith(p, "from_the_agent = 2").waitFor({ timeout: TIMEOUT });
      }
      for (const p of [a, b]) assert.equal(await cellWith(p, "agent_").count(), 0);
      const report = await sb.locator("#rewindReport").innerText();
      log("rewind:", report.replace(/\s+/g, " "));
      assert.equal(statSync(ystore).ino, before.ino, "the document store was replaced");
      assert.ok(!report.includes("jupyter_ystore"), "the rewind names the document store: " + report);
      // The cells' removal reaches the store as new updates, in the same file.
      await until("the rewind's changes in the document store", () => updates() > before.updates);
      const st = statSync(ystore);
      assert.ok(st.size >= before.size && st.mtimeMs >= before.mtimeMs, "the document store went back: " +
        JSON.stringify({ before, after: { size: st.size, mtimeMs: st.mtimeMs } }));
      await sb.locator("#rwClose").click();
    });
  } finally {
    await browser.close();
  }
}

runTest(steps, "ak-collab-", run);
