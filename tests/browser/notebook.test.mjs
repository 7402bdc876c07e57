// Browser tests of the notebook as the agent's workspace: the agent's
// notebook tools answered by the extension's notebook comm
// (labextension/src/notebook.ts, its operations in notebookOps.ts) on the
// notebook's shared model, in
// JupyterLab 4 and Notebook 7, with the scripted model calling the tools.
// The review of a change in the sidebar (light and dark), "Ask the agent"
// and "Fix with the agent", Ctrl+Z, saving, a rewind from the sidebar that
// puts the cells back; two pages on one kernel (the prompting one acts);
// a prompt-mode notebook, whose agent's cells run as code on Shift+Enter;
// bad input (malformed requests, an unknown cell, a cell the user is
// typing in, a page that goes away or goes silent mid-turn, a notebook of
// 2,000 cells, a cell with 10 MB of output). Run by run.sh.
//
// Environment: LAB_PYTHON (a python with jupyterlab and notebook 7),
// AGENTKERNEL_BIN, SCRIPTED_BIN, LAB_EXTENSION.
import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import assert from "node:assert/strict";
import {
  Steps, TIMEOUT, attached, browse, call, cellWith, cells, collapse, commOpen, jupyterEnv, kernelIdle, runTest, say, send, setting,
  sidebar, sourceOf, startJupyter, startModel, themeMenu, turnDone, until, writeNotebook,
} from "./jupyterkit.mjs";

const steps = new Steps("notebook");
const step = (name, fn) => steps.step(name, fn);
const shot = (page, name) => steps.shot(page, name);
const log = (...a) => steps.log(...a);

let model; // the scripted model

// ---- the scripted model's turns ----

/** The tool results (role tool) of the model's last request, joined. */
async function lastToolResults() {
  const reqs = await model.requests();
  const last = reqs[reqs.length - 1];
  const msgs = (last && last.body && last.body.messages) || [];
  return msgs.filter((m) => m.role === "tool").map((m) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content)));
}

/** The text of every message the model was sent in its last request. */
async function lastRequestText() {
  const reqs = await model.requests();
  return JSON.stringify(reqs[reqs.length - 1].body.messages);
}

// ---- the notebook ----

/** The user's notebook: cells with known ids (nbformat 4.5). */
function userCells() {
  const code = (id, source) => ({ id, cell_type: "code", metadata: {}, source, outputs: [], execution_count: null });
  return [
    { id: "intro", cell_type: "markdown", metadata: {}, source: "# Sales\nThe goal: **quarterly totals** by region." },
    code("user-code", "x = 40\nprint(x + 2)"),
    code("user-typo", "print(undefined_total)"),
    code("spare", "y = 1"),
    code("scratch", "z = 2"),
    code("ask-here", ""),
  ];
}

/**
 * The last cell of a userCells() notebook in page p, once every cell is
 * shown: the page renders them in turn, and the last one shown too early
 * is another cell (a prompt typed there went into "y = 1" and ran as
 * Python).
 */
async function lastUserCell(p) {
  const all = userCells().length;
  await until("every cell shown", async () => (await cells(p).count()) >= all);
  return cells(p).last();
}

/** WCAG contrast of two computed colours (rgb(), rgba() or color(srgb …)). */
function contrast(fg, bg) {
  const rgb = (c) => {
    const n = c.match(/[\d.]+/g).map(Number);
    return c.startsWith("color(") ? n.slice(0, 3).map((x) => x * 255) : n.slice(0, 3);
  };
  const lum = (c) => {
    const [r, g, b] = rgb(c).map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const [a, b] = [lum(fg), lum(bg)].sort((x, y) => y - x);
  return (a + 0.05) / (b + 0.05);
}

/** The pending review in the sidebar: its diff's lines, readable (contrast ≥ 4.5). */
async function assertReview(page, removed, added) {
  const sb = sidebar(page);
  const ask = sb.locator("#ask.review");
  await ask.waitFor({ state: "visible", timeout: TIMEOUT });
  for (const [cls, line] of [["dl-del", removed], ["dl-add", added]]) {
    if (line === null) continue;
    const row = ask.locator(".celldiff ." + cls, { hasText: line });
    await row.first().waitFor({ timeout: TIMEOUT });
    const c = await row.first().evaluate((n) => ({ fg: getComputedStyle(n).color, bg: getComputedStyle(n).backgroundColor }));
    assert.ok(contrast(c.fg, c.bg) >= 4.5, `${cls} line "${line}" is hard to read: ${JSON.stringify(c)}`);
  }
  assert.equal((await sb.locator("#approve").innerText()).trim(), "Accept");
  assert.equal((await sb.locator("#alwaysAllow").innerText()).trim(), "Always");
  assert.equal((await sb.locator("#deny").innerText()).trim(), "Reject");
}

/** Clicks a button of the pending review: approve (Accept), alwaysAllow (Always) or deny (Reject). */
async function answer(page, id) {
  const b = sidebar(page).locator("#" + id);
  await b.click();
  await sidebar(page).locator("#ask").waitFor({ state: "hidden", timeout: TIMEOUT });
}

// ---- the scenario, in JupyterLab and in Notebook 7 ----

/**
 * The agent works in notebook name, open in page (whose sidebar is
 * open): it quotes a markdown cell it read, inserts cells, runs one, edits
 * a user's cell after a review, moves and deletes cells; Ctrl+Z undoes;
 * "Fix with the agent" and "Ask the agent"; the notebook saved validates.
 * tag names the screenshots.
 */
async function scenario(page, server, name, tag) {
  await step(`${tag}: the agent quotes the markdown cell it read (the request carried it)`, async () => {
    await model.enqueue(call("notebook_read", {}), say("The notebook's goal: quarterly totals by region."));
    await send(page, "What is this notebook for?");
    await sidebar(page).locator("#timeline").filter({ hasText: "The notebook's goal: quarterly totals by region." })
      .waitFor({ timeout: TIMEOUT });
    const read = (await lastToolResults()).join("\n");
    assert.ok(read.includes("The goal: **quarterly totals** by region.") && read.includes("id=intro markdown"), read);
    assert.ok(read.includes("id=user-code code") && read.includes(name), read);
    await turnDone(page, model);
  });

  await step(`${tag}: it inserts a markdown and a code cell, shown in the notebook at once`, async () => {
    await model.enqueue(
      call("notebook_insert_cell", { type: "markdown", source: "## Totals\nBy region, from the sales table.", index: 2 }),
      call("notebook_insert_cell", { source: "totals = {'north': 3, 'south': 4}\nprint(sum(totals.values()))", index: 3 }),
      say("Added a section and its code."));
    await send(page, "Add the totals");
    await cells(page).nth(2).locator("h2", { hasText: "Totals" }).waitFor({ timeout: TIMEOUT });
    await until("the code cell at index 3", async () => (await sourceOf(page, 3)).includes("totals = {'north': 3"));
    await turnDone(page, model);
    await shot(page, tag + "-inserted");
  });

  await step(`${tag}: it runs a cell, approved in the sidebar, which shows the cell's code and names it: its output and execution count appear in that cell`, async () => {
    await model.enqueue(call("notebook_run_cell", { index: 3 }), say("It prints 7."));
    await send(page, "Run it");
    const sb = sidebar(page);
    const approve = sb.locator("#approve");
    await approve.waitFor({ state: "visible", timeout: TIMEOUT });
    assert.equal((await approve.innerText()).trim(), "Approve", "a run is approved, not reviewed");
    const [, id] = (await sb.locator("#askText").innerText()).trim().match(/^Run cell (\S+) of the notebook\?$/) || [];
    assert.ok(id, "the ask does not name the cell: " + (await sb.locator("#askText").innerText()));
    const asked = sb.locator("#timeline article.msg .askbody").last();
    assert.equal((await asked.locator(".label").innerText()).trim(), `The agent wants to run cell ${id} of the notebook`);
    assert.equal((await asked.locator("pre.code").innerText()).trim(), "totals = {'north': 3, 'south': 4}\nprint(sum(totals.values()))");
    await approve.click();
    const cell = cells(page).nth(3);
    await cell.locator(".jp-OutputArea-output", { hasText: /^\s*7\s*$/ }).waitFor({ timeout: TIMEOUT });
    await until("the execution count in the cell", async () => /\[\d+\]/.test(await cell.locator(".jp-InputPrompt").innerText()));
    assert.match((await lastToolResults()).join("\n"), /7/);
    await turnDone(page, model);
  });

  await step(`${tag}: a change to a user's cell is reviewed in the sidebar with its diff: Reject leaves the cell`, async () => {
    await model.enqueue(call("notebook_edit_cell", { id: "user-code", search: "x = 40", replace: "x = 41" }), say("Left it."));
    await send(page, "Make x 41");
    await assertReview(page, "- x = 40", "+ x = 41");
    await shot(page, tag + "-review-light");
    await answer(page, "deny");
    await turnDone(page, model);
    assert.equal(await sourceOf(page, 1), "x = 40\nprint(x + 2)");
    assert.match((await lastToolResults()).join("\n"), /denied|rejected|declined/i);
  });

  await step(`${tag}: the review reads well in the dark theme too; Accept changes the cell`, async () => {
    await model.enqueue(call("notebook_edit_cell", { id: "user-code", search: "x = 40", replace: "x = 41" }), say("Changed it."));
    await send(page, "Please, make x 41");
    await assertReview(page, "- x = 40", "+ x = 41");
    await themeMenu(page, "JupyterLab Dark");
    await until("the sidebar in the dark theme", async () =>
      (await sidebar(page).locator("html").evaluate(() => getComputedStyle(document.documentElement).colorScheme)) === "dark");
    await assertReview(page, "- x = 40", "+ x = 41");
    await shot(page, tag + "-review-dark");
    await themeMenu(page, "JupyterLab Light");
    await answer(page, "approve");
    await until("the cell to change", async () => (await sourceOf(page, 1)) === "x = 41\nprint(x + 2)");
    await turnDone(page, model);
  });

  await step(`${tag}: Ctrl+Z in the cell undoes the agent's edit`, async () => {
    await cells(page).nth(1).locator(".cm-content").click();
    await page.keyboard.press("Control+z");
    await until("the edit undone", async () => (await sourceOf(page, 1)) === "x = 40\nprint(x + 2)");
    await page.keyboard.press("Escape");
  });

  await step(`${tag}: it moves a cell, and deletes two (the first asked: Always; the second not asked again)`, async () => {
    await model.enqueue(
      call("notebook_move_cell", { id: "spare", to: 0 }),
      call("notebook_delete_cell", { id: "spare" }),
      call("notebook_delete_cell", { id: "scratch" }),
      say("Moved, then deleted both."));
    await send(page, "Tidy up");
    await assertReview(page, "- y = 1", null);
    assert.equal(await sourceOf(page, 0), "y = 1", "the moved cell is not first");
    await answer(page, "alwaysAllow");
    await sidebar(page).locator("#timeline").filter({ hasText: "Moved, then deleted both." }).waitFor({ timeout: TIMEOUT });
    assert.ok(await sidebar(page).locator("#ask").isHidden(), "the second delete was asked");
    await until("both deleted", async () => (await cellWith(page, "y = 1").count()) === 0 && (await cellWith(page, "z = 2").count()) === 0);
    await turnDone(page, model);
  });

  await step(`${tag}: Z (undo cell operation, in command mode) brings the deleted cell back`, async () => {
    // JupyterLab's key for undoing a cell operation (Ctrl+Z in command
    // mode does not undo one, the user's own or the agent's).
    await cells(page).nth(0).locator(".jp-InputPrompt").click(); // command mode, the notebook focused
    await page.keyboard.press("z");
    await cellWith(page, "z = 2").waitFor({ timeout: TIMEOUT });
  });

  await step(`${tag}: "Fix with the agent" on a NameError sends the cell and its error; the fix is reviewed and accepted`, async () => {
    const typo = cellWith(page, "print(undefined_total)");
    await typo.locator(".cm-content").click();
    await page.keyboard.press("Shift+Enter");
    const fix = typo.locator("button.ak-fix");
    await fix.waitFor({ state: "visible", timeout: TIMEOUT });
    await shot(page, tag + "-nameerror");
    await model.enqueue(call("notebook_edit_cell", { id: "user-typo", source: "undefined_total = 0\nprint(undefined_total)" }), say("Defined it."));
    await fix.click();
    await sidebar(page).locator("#timeline article.msg.user").filter({ hasText: "Fix cell user-typo" }).waitFor({ timeout: TIMEOUT });
    await assertReview(page, null, "+ undefined_total = 0");
    const sent = await lastRequestText();
    assert.ok(sent.includes("user-typo") && sent.includes("NameError"), sent);
    await answer(page, "approve");
    await cellWith(page, "undefined_total = 0").waitFor({ timeout: TIMEOUT });
    await turnDone(page, model);
  });

  await step(`${tag}: "Ask the agent" in a cell's toolbar sends the question naming the cell`, async () => {
    await cellWith(page, "x = 40").locator(".jp-InputPrompt").click();
    const ask = cellWith(page, "x = 40").locator('.jp-cell-toolbar [data-command="agentkernel:ask-about-cell"]');
    await ask.waitFor({ state: "visible", timeout: TIMEOUT });
    await model.enqueue(say("Because print adds 2."));
    await ask.click();
    const dialog = page.locator(".jp-Dialog");
    await dialog.locator("input").fill("Why does it print 42?");
    await dialog.locator("button", { hasText: "Ask" }).click();
    await sidebar(page).locator("#timeline").filter({ hasText: "Because print adds 2." }).waitFor({ timeout: TIMEOUT });
    const sent = await lastRequestText();
    assert.ok(sent.includes("Why does it print 42?") && sent.includes("cell user-code"), sent);
    await turnDone(page, model);
  });

  await step(`${tag}: an unknown cell id is a clear tool error`, async () => {
    await model.enqueue(call("notebook_move_cell", { id: "no-such-cell", to: 0 }), say("There is no such cell."));
    await send(page, "Move the cell no-such-cell up");
    await turnDone(page, model);
    assert.match((await lastToolResults()).join("\n"), /cell no-such-cell: no such cell/);
  });

  await step(`${tag}: saved (Ctrl+S), the notebook on disk has the edits and validates with nbformat`, async () => {
    await cells(page).nth(0).locator(".jp-InputPrompt").click();
    await page.keyboard.press("Control+s");
    const path = join(server.work, name);
    const nb = await until("the notebook saved", async () => {
      const nb = JSON.parse(readFileSync(path, "utf8"));
      return nb.cells.some((c) => [].concat(c.source).join("").includes("undefined_total = 0")) ? nb : null;
    });
    execFileSync(server.python, ["-c", "import nbformat, sys; nbformat.validate(nbformat.read(sys.argv[1], as_version=4))", path]);
    const src = (c) => [].concat(c.source).join("");
    const byId = Object.fromEntries(nb.cells.map((c) => [c.id, c]));
    assert.equal(src(byId["user-code"]), "x = 40\nprint(x + 2)");
    assert.equal(src(byId["user-typo"]), "undefined_total = 0\nprint(undefined_total)");
    assert.ok(!byId.spare, "the deleted cell is saved");
    assert.ok(byId.scratch, "the cell Ctrl+Z brought back is not saved");
    const md = nb.cells.find((c) => c.cell_type === "markdown" && src(c).startsWith("## Totals"));
    const code = nb.cells.find((c) => src(c).startsWith("totals = {"));
    assert.ok(md && code, JSON.stringify(nb.cells.map(src)));
    assert.ok(code.execution_count > 0, "no execution count: " + JSON.stringify(code));
    assert.match(JSON.stringify(code.outputs), /7/);
  });

  await step(`${tag}: a rewind from the sidebar takes away the cell the agent inserted and puts back the one it deleted (its id, output and count), and is saved`, async () => {
    const path = join(server.work, name);
    const src = (c) => [].concat(c.source).join("");
    const saved = JSON.parse(readFileSync(path, "utf8"));
    const totals = saved.cells.find((c) => src(c).startsWith("totals = {"));
    const at = saved.cells.indexOf(totals);
    await model.enqueue(
      call("notebook_insert_cell", { source: "rewound = 1", index: 0 }),
      call("notebook_delete_cell", { id: totals.id }),
      say("Swapped the totals for a new cell."));
    await send(page, "Swap the totals for a new cell");
    await until("the swap", async () => (await cellWith(page, "rewound = 1").count()) === 1 && (await cellWith(page, "totals = {").count()) === 0);
    await turnDone(page, model);

    const sb = sidebar(page);
    const prompt = sb.locator("article.msg.user").filter({ hasText: "Swap the totals for a new cell" });
    await prompt.hover();
    await prompt.locator("button.rewind").click();
    await sb.locator("#rwKernel").uncheck(); // the conversation and the notebook: no kernel replay
    await sb.locator("#rwDo").click();
    await sb.locator("#rwSummary").filter({ hasText: "2 cell changes turned back" }).waitFor({ timeout: TIMEOUT });
    await until("the inserted cell gone, the deleted one back", async () =>
      (await cellWith(page, "rewound = 1").count()) === 0 && (await sourceOf(page, at)).startsWith("totals = {"));
    const back = cells(page).nth(at);
    await back.locator(".jp-OutputArea-output", { hasText: /^\s*7\s*$/ }).waitFor({ timeout: TIMEOUT });
    assert.equal((await back.locator(".jp-InputPrompt").innerText()).replace(/\s/g, ""), `[${totals.execution_count}]:`);
    await shot(page, tag + "-rewound");
    await sb.locator("#rwClose").click();

    await cells(page).nth(0).locator(".jp-InputPrompt").click();
    await page.keyboard.press("Control+s");
    const nb = await until("the rewound notebook saved", async () => {
      const nb = JSON.parse(readFileSync(path, "utf8"));
      return nb.cells.some((c) => c.id === totals.id) && !nb.cells.some((c) => src(c) === "rewound = 1") ? nb : null;
    });
    execFileSync(server.python, ["-c", "import nbformat, sys; nbformat.validate(nbformat.read(sys.argv[1], as_version=4))", path]);
    const again = nb.cells[at];
    assert.equal(again.id, totals.id, "the cell came back under another id, or elsewhere");
    assert.deepEqual([src(again), again.execution_count, again.outputs], [src(totals), totals.execution_count, totals.outputs]);
  });
}

// ---- the run ----

async function run(tmp) {
  for (const d of ["work", "home", "config", "runtime", "data", "agent-data"]) mkdirSync(join(tmp, d), { recursive: true });
  setting(tmp, "@jupyterlab/apputils-extension:notification", { fetchNews: "false" });
  // The sidebar stays closed until opened: the comm must work without it.
  setting(tmp, "@agentkernel/jupyterlab:plugin", { autoOpen: false });
  // No inline completions (complete.test.mjs tests them): a request sent
  // while a cell is typed would take a turn queued for the agent.
  setting(tmp, "@agentkernel/jupyterlab:completer", { inlineCompletions: false });
  model = await startModel();
  const env = jupyterEnv(tmp, model);
  const prefix = join(tmp, "prefix");
  execFileSync(process.env.AGENTKERNEL_BIN, ["install", "--prefix", prefix, "--probe=false"], { env, stdio: "inherit" });
  cpSync(process.env.LAB_EXTENSION, join(prefix, "share", "jupyter", "labextensions", "@agentkernel", "jupyterlab"), { recursive: true });
  const work = join(tmp, "work");
  writeNotebook(join(work, "lab.ipynb"), "agent-code", "Agent (code)", userCells());
  writeNotebook(join(work, "nb7.ipynb"), "agent-code", "Agent (code)", userCells());

  const python = process.env.LAB_PYTHON;
  // The app exposed (window.jupyterapp): the steps wait for the page's
  // notebook comm, and the malformed requests' step hands it requests.
  const lab = { ...(await startJupyter({ python, app: "jupyterlab", tmp, env, args: ["--LabApp.expose_app_in_browser=True"] })),
    work, python, env };
  const browser = await browse(tmp);
  try {
    const page = await browser.newPage();
    steps.page = page;
    page.on("pageerror", (e) => log("page error:", e.message));

    await step("lab: with the sidebar closed, a %%agent cell's turn reads the notebook through the comm", async () => {
      await page.goto(`${lab.base}/lab/tree/lab.ipynb?token=${lab.token}`);
      await cells(page).first().waitFor({ timeout: TIMEOUT });
      await kernelIdle(lab, "lab.ipynb");
      await commOpen(page);
      assert.ok(await page.locator("#agentkernel-sidebar").isHidden(), "the sidebar opened by itself");
      await model.enqueue(call("notebook_read", {}), say("It is about quarterly totals."));
      const last = await lastUserCell(page);
      await last.locator(".cm-content").click();
      await page.keyboard.type("%%agent\nWhat is this notebook for?");
      await page.keyboard.press("Control+Enter");
      await last.locator(".jp-OutputArea-output", { hasText: "It is about quarterly totals." }).waitFor({ timeout: TIMEOUT });
      const read = (await lastToolResults()).join("\n");
      assert.ok(read.includes("The goal: **quarterly totals** by region."), read);
      // The cell the user is in is the one that asked.
      assert.ok(read.includes("the user is in cell ask-here"), read);
    });

    await step("lab: the sidebar opens (Ctrl+Shift+Y)", async () => {
      await page.keyboard.press("Control+Shift+Y");
      await attached(page);
    });

    await mirrorRead(page);
    await scenario(page, lab, "lab.ipynb", "lab");
    await malformed(page);
    await severalFrontends(browser, lab);
    await badInput(browser, page, lab);
    await promptMode(browser, page, lab);
  } finally {
    await browser.close();
  }

  // Notebook 7: the same extension, the same scenario.
  setting(tmp, "@agentkernel/jupyterlab:plugin", { autoOpen: true });
  const nb7 = { ...(await startJupyter({ python, app: "notebook", tmp, env, args: ["--JupyterNotebookApp.expose_app_in_browser=True"] })),
    work, python };
  const browser2 = await browse(tmp);
  try {
    const page = await browser2.newPage();
    steps.page = page;
    // Notebook 7.6 itself logs "Cannot read properties of undefined (reading 'schema')" as it
    // starts (its shortcuts plugin), with or without this extension: not ours.
    page.on("pageerror", (e) => log("page error:", e.message));
    await step("nb7: a notebook on Agent opens with the sidebar", async () => {
      await page.goto(`${nb7.base}/notebooks/nb7.ipynb?token=${nb7.token}`);
      await attached(page);
      await kernelIdle(nb7, "nb7.ipynb");
      await commOpen(page);
    });
    await scenario(page, nb7, "nb7.ipynb", "nb7");
  } finally {
    await browser2.close();
  }
}

/**
 * The kernel's mirror of the notebook: what the user types in a cell is in
 * the agent's next notebook_read, which the kernel answers from the changes
 * the page sent it, asking the page for no read. The edit is then undone.
 */
async function mirrorRead(page) {
  await step("lab: a user's edit is in the agent's next read, answered from the kernel's mirror (the page is asked for no read)", async () => {
    await page.evaluate(() => {
      const panel = window.jupyterapp.shell.currentWidget;
      const kernel = panel.sessionContext.session.kernel;
      const comm = [...kernel._comms.values()].find((c) => c.targetName === "agentkernel.notebook" && !c.isDisposed);
      window.__reads = 0;
      const handle = comm.onMsg;
      comm.onMsg = (msg) => {
        const req = msg.content.data && msg.content.data.request;
        if (req && req.op === "read") window.__reads++;
        return handle(msg);
      };
    });
    const edit = "\n# edited by the user";
    const last = await lastUserCell(page);
    await last.locator(".cm-content").click();
    await page.keyboard.press("Control+End");
    await page.keyboard.type(edit);
    await model.enqueue(call("notebook_read", {}), say("Read."));
    await send(page, "Read the notebook again");
    await turnDone(page, model);
    const read = (await lastToolResults()).join("\n");
    assert.ok(read.includes("# edited by the user"), read);
    assert.equal(await page.evaluate(() => window.__reads), 0, "the page was asked for a read: the kernel's mirror was not used");
    await last.locator(".cm-content").click();
    await page.keyboard.press("Control+End");
    for (let i = 0; i < edit.length; i++) await page.keyboard.press("Backspace");
    await until("the edit undone", async () => !(await last.innerText()).includes("edited by the user"));
  });
}

/**
 * Malformed requests, handed to the comm of the notebook open in page as
 * if the kernel had sent them (the replies caught before they leave): each
 * is answered with what is wrong, and the notebook is as it was.
 */
async function malformed(page) {
  await step("lab: malformed requests (no id, an unknown op, bad args, a bad index, an unknown cell) are answered clearly, and change nothing", async () => {
    const requests = [
      { op: "move", args: { id: "intro", index: 0 } }, // no id: nothing to answer to
      { id: "r1", op: "explode", args: {} },
      { id: "r2", op: "move", args: "intro" },
      { id: "r3", op: "move", args: { id: "intro", index: 99 } },
      { id: "r4", op: "move", args: { id: "intro", index: "1" } },
      { id: "r5", op: "set_source", args: { id: "no-such-cell", source: "x" } },
      { id: "r6", op: "set_source", args: { id: "intro" } },
      { id: "r7", op: "set_source", args: { id: "intro", source: 5 } },
      { id: "r8", op: "insert", args: { index: -1, source: "x" } },
      { id: "r9", op: "insert", args: { cell_type: "python", source: "x" } },
      { id: "r10", op: "insert", args: { source: "x", outputs: [{ text: "no type" }] } },
      { id: "r11", op: "delete", args: { id: 7 } },
      { id: "r12", op: "set_outputs", args: { id: "intro", outputs: [] } },
      { id: "r13", op: "insert", args: { source: "x", execution_count: "3" } },
    ];
    const got = await page.evaluate((requests) => {
      const panel = window.jupyterapp.shell.currentWidget;
      const cells = () => panel.content.model.sharedModel.cells.map((c) => c.id + ":" + c.getSource());
      const kernel = panel.sessionContext.session.kernel;
      const comm = [...kernel._comms.values()].find((c) => c.targetName === "agentkernel.notebook" && !c.isDisposed);
      const before = cells();
      const replies = [];
      comm.send = (data) => { replies.push(data.reply); return { dispose() {} }; };
      try {
        for (const request of requests) comm.onMsg({ content: { comm_id: comm.commId, data: { request } } });
      } finally {
        delete comm.send; // the prototype's again
      }
      return { replies, before, after: cells() };
    }, requests);
    log("malformed requests answered:", got.replies.map((r) => r.id + ": " + r.error).join(" | "));
    assert.deepEqual(got.after, got.before, "a malformed request changed the notebook");
    assert.deepEqual(got.replies.map((r) => r.id), requests.slice(1).map((r) => r.id));
    assert.ok(got.replies.every((r) => r.ok === false && typeof r.error === "string" && r.error.length > 0), JSON.stringify(got.replies));
    const err = Object.fromEntries(got.replies.map((r) => [r.id, r]));
    assert.match(err.r1.error, /unknown op "explode"/);
    assert.match(err.r2.error, /args: want an object/);
    assert.match(err.r3.error, /index 99: the notebook has \d+ cells \(want 0 to \d+\)/);
    assert.match(err.r4.error, /index "1"/);
    assert.equal(err.r5.code, "no_cell");
    assert.match(err.r5.error, /no cell no-such-cell/);
    assert.match(err.r6.error, /no source given/);
    assert.match(err.r7.error, /source: want a string/);
    assert.match(err.r8.error, /index -1/);
    assert.match(err.r9.error, /cell_type "python"/);
    assert.match(err.r10.error, /outputs: want a list of nbformat outputs/);
    assert.match(err.r11.error, /id: want the id of a cell/);
    assert.match(err.r12.error, /only a code cell has outputs/);
    assert.match(err.r13.error, /execution_count/);
  });
}

/**
 * Two pages on one notebook and its kernel (each its own Jupyter session):
 * the agent works in the notebook of the page whose prompt it answers.
 */
async function severalFrontends(browser, lab) {
  await step("lab: with two pages on one kernel, the page that sent the prompt is the one the agent edits", async () => {
    writeNotebook(join(lab.work, "two.ipynb"), "agent-code", "Agent (code)", userCells());
    const pages = [];
    for (let i = 0; i < 2; i++) {
      const p = await browser.newPage();
      await p.goto(`${lab.base}/lab/tree/two.ipynb?token=${lab.token}`);
      await cells(p).first().waitFor({ timeout: TIMEOUT });
      pages.push(p);
    }
    await kernelIdle(lab, "two.ipynb");
    const sessions = await (await fetch(`${lab.base}/api/sessions?token=${lab.token}`)).json();
    assert.equal(sessions.filter((x) => x.path.endsWith("two.ipynb")).length, 1, "the pages are not on one kernel");
    try {
      for (const [i, p] of pages.entries()) {
        // Each page's comm is open before its prompt (the kernel's idle).
        await commOpen(p);
      }
      for (const [i, p] of [pages[1], pages[0]].entries()) {
        const text = `from page ${i === 0 ? "two" : "one"}`;
        await model.enqueue(call("notebook_insert_cell", { source: `# ${text}`, index: 0 }), say("Inserted " + text + "."));
        const last = await lastUserCell(p);
        await last.locator(".cm-content").click();
        await p.keyboard.press("Control+a");
        await p.keyboard.type(`%%agent\nInsert a cell saying ${text}`);
        await p.keyboard.press("Control+Enter");
        await last.locator(".jp-OutputArea-output", { hasText: "Inserted " + text + "." }).waitFor({ timeout: TIMEOUT });
        await cellWith(p, "# " + text).waitFor({ timeout: TIMEOUT });
      }
      assert.equal(await cellWith(pages[0], "# from page two").count(), 0, "page one got page two's cell");
      assert.equal(await cellWith(pages[1], "# from page one").count(), 0, "page two got page one's cell");
    } finally {
      for (const p of pages) await p.close();
    }
  });
}

/**
 * A notebook on the Agent kernel (prompt mode: a bare code cell is a
 * request to the agent): the code cell the agent inserts, and runs after
 * the sidebar's approval, starts with %%code, so the user's Shift+Enter
 * runs it as code (the model is asked nothing), and the notebook saved,
 * run headless by agentkernel run, gives the same output.
 */
async function promptMode(browser, page, lab) {
  await step("lab: in a prompt-mode notebook the agent's cell is code: Shift+Enter runs it with no model request, and agentkernel run gives its output", async () => {
    const path = join(lab.work, "prompt.ipynb");
    writeNotebook(path, "agent", "Agent", [{ id: "spare", cell_type: "code", metadata: {}, source: "", outputs: [], execution_count: null }]);
    const p = await sidebarPage(browser, lab, "prompt.ipynb");
    await model.enqueue(call("notebook_insert_cell", { source: "print(6 * 7)", index: 0 }), call("notebook_run_cell", { index: 0 }),
      say("It prints 42."));
    await send(p, "Add a cell that prints 6 * 7, and run it");
    const sb = sidebar(p);
    await sb.locator("#approve").waitFor({ state: "visible", timeout: TIMEOUT });
    assert.equal((await sb.locator("#timeline article.msg .askbody pre.code").last().innerText()).trim(), "print(6 * 7)",
      "the ask does not show the code that runs");
    await sb.locator("#approve").click();
    // By its text: the tabs the workspace restores hold cells of their own.
    const cell = cellWith(p, "print(6 * 7)");
    const output = cell.locator(".jp-OutputArea-output", { hasText: /^\s*42\s*$/ });
    await output.waitFor({ timeout: TIMEOUT });
    assert.equal((await cell.locator(".jp-InputArea-editor").innerText()).replace(/\u200b/g, ""), "%%code\nprint(6 * 7)");
    await turnDone(p, model);

    // The user runs it again, with its output cleared first.
    const asked = (await model.requests()).length;
    await p.evaluate(() => window.jupyterapp.shell.currentWidget.content.widgets[0].model.outputs.clear());
    await until("the output cleared", async () => (await cell.locator(".jp-OutputArea-output").count()) === 0);
    await cell.locator(".cm-content").click();
    await p.keyboard.press("Shift+Enter");
    await output.waitFor({ timeout: TIMEOUT });
    await kernelIdle(lab, "prompt.ipynb");
    assert.equal((await model.requests()).length, asked, "the cell went to the model");

    await cell.locator(".jp-InputPrompt").click();
    await p.keyboard.press("Control+s");
    const src = (c) => [].concat(c.source).join("");
    const outputs = (c) => c.outputs.map((o) => ({ ...o, text: [].concat(o.text).join("") }));
    const saved = await until("the notebook saved", async () => {
      const nb = JSON.parse(readFileSync(path, "utf8"));
      return nb.cells[0] && src(nb.cells[0]).startsWith("%%code") && nb.cells[0].outputs.length ? nb : null;
    });
    const out = join(lab.work, "prompt-run.ipynb");
    execFileSync(process.env.AGENTKERNEL_BIN, ["run", path, "-o", out], { env: lab.env, cwd: lab.work });
    const ran = JSON.parse(readFileSync(out, "utf8"));
    log("headless run of the saved notebook:", JSON.stringify(outputs(ran.cells[0])));
    assert.equal(src(ran.cells[0]), "%%code\nprint(6 * 7)");
    assert.deepEqual(outputs(ran.cells[0]), outputs(saved.cells[0]));
    assert.equal((await model.requests()).length, asked, "the headless run asked the model");
    await p.close();
    steps.page = page;
  });
}

/** A notebook of n code cells, each with an output of size characters. */
function bigNotebook(n, size) {
  const out = "x".repeat(size - 1) + "\n";
  return Array.from({ length: n }, (_, i) => ({
    id: "big" + i, cell_type: "code", metadata: {}, source: `v${i} = ${i}  # cell ${i}`,
    outputs: [{ output_type: "stream", name: "stdout", text: out }], execution_count: i + 1,
  }));
}

/**
 * A new page of browser on notebook name of lab, its notebook comm open and
 * its sidebar shown; the page a failing step's screenshot shows.
 */
async function sidebarPage(browser, lab, name) {
  const p = await browser.newPage();
  steps.page = p;
  await p.goto(`${lab.base}/lab/tree/${name}?token=${lab.token}`);
  await cells(p).last().waitFor({ timeout: TIMEOUT });
  await kernelIdle(lab, name);
  await commOpen(p);
  if (!(await p.locator("#agentkernel-sidebar").isVisible())) await p.keyboard.press("Control+Shift+Y");
  await attached(p);
  return p;
}

/**
 * Bad input in JupyterLab: a notebook of 2,000 cells, and a cell with
 * 10 MB of output, are read within the budget; the agent's edit of a cell
 * the user is typing in is refused as a conflict (their text kept); a page
 * closed in the middle of a turn fails the agent's call at once; a page
 * that stops answering fails it after the protocol's 30 s; either way the
 * turn ends and the kernel serves on.
 */
async function badInput(browser, page, lab) {
  await step("lab: a 2,000-cell notebook's read is bounded (the model gets a page and how to read on)", async () => {
    writeNotebook(join(lab.work, "big.ipynb"), "agent-code", "Agent (code)", bigNotebook(2000, 2000));
    await page.goto(`${lab.base}/lab/tree/big.ipynb?token=${lab.token}`);
    await cells(page).first().waitFor({ timeout: TIMEOUT });
    await kernelIdle(lab, "big.ipynb");
    await commOpen(page);
    await page.keyboard.press("Control+Shift+Y");
    await attached(page);
    await model.enqueue(call("notebook_read", {}), say("A big one."));
    await send(page, "What is in this notebook?");
    await turnDone(page, model);
    const read = (await lastToolResults()).join("\n");
    log("2,000-cell read:", read.length, "characters to the model");
    assert.ok(read.startsWith("big.ipynb: 2000 cells"), read.slice(0, 200));
    assert.ok(read.length <= 8000 * 4 + 200, "unbounded: " + read.length);
    assert.match(read, /\[\d+ more cells not shown: read with start=\d+\]/);
  });

  await step("lab: a cell with 10 MB of output: the read is bounded, the output kept whole", async () => {
    const huge = bigNotebook(1, 10 << 20);
    huge.push({ id: "after", cell_type: "code", metadata: {}, source: "after = 1", outputs: [], execution_count: null });
    writeNotebook(join(lab.work, "huge.ipynb"), "agent-code", "Agent (code)", huge);
    const p = await sidebarPage(browser, lab, "huge.ipynb");
    await model.enqueue(call("notebook_read", {}), say("One cell prints a lot."));
    await send(p, "What is in this notebook?");
    await turnDone(p, model);
    const read = (await lastToolResults()).join("\n");
    log("10 MB output read:", read.length, "characters to the model");
    assert.ok(read.length <= 8000 * 4 + 200, "unbounded: " + read.length);
    assert.ok(read.includes("id=after code") && read.includes("after = 1"), read.slice(0, 300));
    assert.match(read, /more characters/);
    const kept = await p.evaluate(() => {
      const cell = window.jupyterapp.shell.currentWidget.content.model.sharedModel.cells[0];
      return cell.getOutputs()[0].text.length;
    });
    assert.equal(kept, 10 << 20, "the output was cut in the notebook");
    await p.close();
    steps.page = page;
  });

  await step("lab: a plot in a cell, read by the cell's id, reaches the model as an image (a read of all cells only names it)", async () => {
    const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
    writeNotebook(join(lab.work, "plot.ipynb"), "agent-code", "Agent (code)", [{
      id: "plot", cell_type: "code", metadata: {}, source: "plt.plot([1, 4, 9])", execution_count: 1,
      outputs: [{ output_type: "display_data", metadata: {}, data: { "image/png": png + "\n", "text/plain": "<Figure size 640x480 with 1 Axes>" } }],
    }]);
    const p = await sidebarPage(browser, lab, "plot.ipynb");
    await model.enqueue(call("notebook_read", {}), call("notebook_read", { id: "plot" }), say("A dot."));
    await send(p, "What does the plot show?");
    await turnDone(p, model);
    const reqs = await model.requests();
    const [whole, one] = reqs.slice(-2).map((r) => JSON.stringify(r.body.messages));
    const images = (s) => s.split("data:image/png;base64," + png.slice(0, 20)).length - 1;
    assert.ok(whole.includes("[image/png]") && whole.includes("notebook_read with a cell's id shows them"), whole.slice(-600));
    assert.equal(images(whole), 0, "the read of all cells sent the image");
    assert.equal(images(one), 1, "the read by id did not send the plot: " + one.slice(-600));
    await p.close();
    steps.page = page;
  });

  await step("lab: the cell the user is in and the text they selected reach the model with their next prompt, unasked", async () => {
    const code = (id, source) => ({ id, cell_type: "code", metadata: {}, source, outputs: [], execution_count: null });
    writeNotebook(join(lab.work, "focus.ipynb"), "agent-code", "Agent (code)", [code("first", "a = 1"), code("total", "total = price * qty")]);
    const p = await sidebarPage(browser, lab, "focus.ipynb");
    await cellWith(p, "total = price * qty").locator(".cm-content").click();
    await p.keyboard.press("End");
    for (let i = 0; i < "price * qty".length; i++) await p.keyboard.press("Shift+ArrowLeft");
    await p.waitForTimeout(400); // the focus settles (150 ms) and is sent
    const before = (await model.requests()).length;
    await model.enqueue(say("It multiplies them."));
    await send(p, "What does the selection do?");
    await turnDone(p, model);
    const reqs = await model.requests();
    assert.equal(reqs.length, before + 1, "the prompt made more than one model request");
    const sent = JSON.stringify(reqs[reqs.length - 1].body.messages.at(-1));
    assert.ok(sent.includes("The user is in cell total.") && sent.includes('Selected there: \\"price * qty\\"'), sent.slice(0, 600));
    await p.close();
    steps.page = page;
  });

  await step("lab: the user is typing in the cell the agent's edit is for: the edit is refused as a conflict, the user's text kept", async () => {
    const code = (id, source) => ({ id, cell_type: "code", metadata: {}, source, outputs: [], execution_count: null });
    writeNotebook(join(lab.work, "typing.ipynb"), "agent-code", "Agent (code)", [code("draft", "draft = 1"), code("other", "")]);
    const p = await sidebarPage(browser, lab, "typing.ipynb");
    await model.enqueue(call("notebook_edit_cell", { id: "draft", source: "draft = 'the agent'" }), say("You are typing there: later."));
    await send(p, "Change the draft");
    await assertReview(p, "- draft = 1", "+ draft = 'the agent'");
    // While the review waits, the user goes back to the cell and types on.
    await cellWith(p, "draft = 1").locator(".cm-content").click();
    await p.keyboard.press("End");
    const before = (await model.requests()).length;
    let typed = "0";
    await p.keyboard.type("0");
    // Accept, by a click that leaves the focus in the cell (a real click
    // in the sidebar would take it); the user types until the tool's
    // answer has reached the model, so the edit arrives mid-typing.
    await sidebar(p).locator("#approve").evaluate((b) => b.click());
    while ((await model.requests()).length === before) {
      await p.keyboard.type("0");
      typed += "0";
    }
    await turnDone(p, model);
    const result = (await lastToolResults()).join("\n");
    log("conflict:", result.replace(/\s+/g, " ").slice(0, 200));
    assert.match(result, /the user is typing in cell draft: not changed; try again when they stop/);
    // By its text: the tabs the workspace restores (lab.ipynb, big.ipynb)
    // hold cells of their own in the page.
    const draft = await cellWith(p, "draft = 1").locator(".jp-InputArea-editor").innerText();
    assert.equal(draft.replace(/\u200b/g, ""), "draft = 1" + typed, "the user's typing was lost");
    const shared = await p.evaluate(() => window.jupyterapp.shell.currentWidget.content.model.sharedModel.cells[0].getSource());
    assert.equal(shared, "draft = 1" + typed);
    await p.close();
    steps.page = page;
  });

  for (const how of ["closed", "silent"]) {
    const name = how + ".ipynb";
    const what = how === "closed"
      ? "lab: a page closed in the middle of a turn: the agent's notebook call fails at once, clearly, and the turn ends"
      : "lab: a page that stops answering mid-edit: the call fails after 30 s, clearly, and the turn ends";
    await step(what, async () => {
      writeNotebook(join(lab.work, name), "agent-code", "Agent (code)", userCells());
      const p = await browser.newPage();
      steps.page = p; // the one a failure's screenshot shows
      let drop = false; // the page's kernel traffic cut both ways
      if (how === "silent") {
        await p.routeWebSocket(/\/api\/kernels\/.*\/channels/, (ws) => {
          const server = ws.connectToServer();
          ws.onMessage((m) => { if (!drop) server.send(m); });
          server.onMessage((m) => { if (!drop) ws.send(m); });
        });
      }
      await p.goto(`${lab.base}/lab/tree/${name}?token=${lab.token}`);
      await cells(p).first().waitFor({ timeout: TIMEOUT });
      await kernelIdle(lab, name);
      await commOpen(p);
      const before = (await model.requests()).length;
      await model.enqueue({ steps: [{ delayMs: 2000 }, ...call("notebook_insert_cell", { source: "never = 1" }).steps] },
        say("Carried on without the notebook."));
      const last = await lastUserCell(p);
      await last.locator(".cm-content").click();
      await p.keyboard.type("%%agent\nAdd a cell");
      await p.keyboard.press("Control+Enter");
      await until("the turn's model request", async () => (await model.requests()).length > before);
      const t0 = Date.now();
      if (how === "closed") {
        await p.close();
      } else {
        drop = true;
      }
      await until("the turn to end", async () => (await model.pending()) === 0 && (await model.requests()).length === before + 2,
        how === "closed" ? TIMEOUT : 90000);
      const failed = (await lastToolResults()).join("\n");
      log(how, "page: the call failed after", Date.now() - t0, "ms:", failed.replace(/\s+/g, " ").slice(0, 160));
      assert.match(failed, how === "closed" ? /no notebook is open to work in/ : /did not answer in 30s/);
      if (how === "silent") await p.close();
      const nb = JSON.parse(readFileSync(join(lab.work, name), "utf8"));
      assert.ok(!JSON.stringify(nb).includes("never = 1"), "the cell reached the file");
      steps.page = page;
    });
  }
}

runTest(steps, "ak-notebook-", run);
