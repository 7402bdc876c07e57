// Browser test of the prompt box's @-mention list (issue 42), in JupyterLab 4
// (the PyPI stack, LAB_PYTHON's) with the extension built from labextension/
// and the scripted model; Debian's chromium. Run through run.sh
// (LAB_PYTHON, AGENTKERNEL_BIN, SCRIPTED_BIN, LAB_EXTENSION, as for
// lab.test.mjs); screenshots go to tests/artifacts/mention-*.png.
//
// A notebook on Agent (code) makes df, a pandas DataFrame (a class with a
// shape when the backing Python has no pandas). Typing "@d" in the sidebar's
// prompt box offers df, its type and shape beside it, and the workspace's
// data.csv; Enter puts "@df " in the box; sending it gives the model a request
// whose context carries df's description, and the timeline shows the prompt
// as typed. Arrow keys move, a click picks, Escape closes; a value holding
// markup is shown as text.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import assert from "node:assert/strict";
import {
  Steps, TIMEOUT, attached, browse, labWorld, runTest, say, sidebar, startJupyter, turnDone, until, writeNotebook,
} from "./jupyterkit.mjs";

const steps = new Steps("mention");
const step = (name, fn) => steps.step(name, fn);

async function run(tmp) {
  const { model, env, work } = await labWorld(tmp);
  // pandas when the backing kernel's Python has it, else a class with a shape.
  const make = 'try:\n    import pandas as pd\n    df = pd.DataFrame({"region": ["north", "south", "east"], "revenue": [120.5, 80.0, 95.25]})\n' +
    'except ImportError:\n    class Table:\n        columns = ["region", "revenue"]\n        dtypes = ["object", "float64"]\n' +
    '        shape = (3, 2)\n    df = Table()\n';
  const source = make + 'note = "<img src=x onerror=alert(1)>"\nprint(df.shape)';
  writeNotebook(join(work, "sales.ipynb"), "agent-code", "Agent (code)",
    [{ id: "load", cell_type: "code", metadata: {}, source, outputs: [], execution_count: null }]);
  writeFileSync(join(work, "data.csv"), "region,revenue\nnorth,120.5\n");
  const lab = await startJupyter({ python: process.env.LAB_PYTHON, app: "jupyterlab", tmp, env });
  const browser = await browse(tmp);
  try {
    const page = await browser.newPage();
    steps.page = page;
    page.on("pageerror", (e) => steps.log("page error:", e.message));
    const sb = sidebar(page);
    const prompt = sb.locator("#prompt");
    const list = sb.locator("#mentionList");
    const items = list.locator("li.mention");

    await step("a notebook on Agent (code) makes df", async () => {
      await page.goto(`${lab.base}/lab/tree/sales.ipynb?token=${lab.token}`);
      await attached(page);
      const cell = page.locator(".jp-Notebook .jp-Cell").first();
      await cell.locator(".jp-InputPrompt").click();
      await page.keyboard.press("Shift+Enter");
      await cell.locator(".jp-OutputArea-output").filter({ hasText: "(3, 2)" }).waitFor({ timeout: TIMEOUT });
    });

    await step("typing @d in the sidebar's prompt box offers df (type and shape beside it), then data.csv", async () => {
      await prompt.click();
      await prompt.pressSequentially("Describe @d");
      await items.first().filter({ hasText: "@df" }).waitFor({ timeout: TIMEOUT });
      const names = await list.locator(".mention-name").allInnerTexts();
      assert.deepEqual(names, ["@df", "@data.csv"], "the list for @d");
      const detail = await items.first().locator(".mention-detail").innerText();
      assert.match(detail, /^(DataFrame|Table) \(3, 2\)$/, "df's detail");
      assert.equal(await items.first().getAttribute("aria-selected"), "true", "the first entry is not the active one");
      await steps.shot(page, "01-list");
    });

    await step("arrow keys move the choice, Escape closes the list and leaves the text", async () => {
      await page.keyboard.press("ArrowDown");
      await until("data.csv active", async () => (await items.nth(1).getAttribute("aria-selected")) === "true");
      await page.keyboard.press("ArrowDown"); // round to the first again
      await until("df active", async () => (await items.first().getAttribute("aria-selected")) === "true");
      await page.keyboard.press("Escape");
      await list.waitFor({ state: "hidden", timeout: TIMEOUT });
      assert.equal(await prompt.inputValue(), "Describe @d");
    });

    await step("Enter picks df: the box holds \"@df \", nothing is sent", async () => {
      await page.keyboard.type("f"); // "@df": the list again
      await items.first().filter({ hasText: "@df" }).waitFor({ timeout: TIMEOUT });
      const before = (await model.requests()).length;
      await page.keyboard.press("Enter");
      await until("the pick", async () => (await prompt.inputValue()) === "Describe @df ");
      assert.ok(await list.isHidden(), "the list stays open after the pick");
      assert.equal((await model.requests()).length, before, "Enter on the list sent the prompt");
    });

    await step("a value holding markup shows as text in the list; a click picks", async () => {
      await page.keyboard.type("and @no");
      const note = items.filter({ hasText: "@note" });
      await note.waitFor({ timeout: TIMEOUT });
      assert.ok((await note.locator(".mention-detail").innerText()).includes("<img src=x"), "the value's text is not shown");
      assert.equal(await list.locator("img").count(), 0, "the value became markup");
      await note.click();
      await until("the click's pick", async () => (await prompt.inputValue()) === "Describe @df and @note ");
    });

    await step("sent, the prompt gives the model df's description; the timeline shows it as typed", async () => {
      await prompt.fill("Describe @df ");
      await model.enqueue(say("Three regions, revenue from 80 to 120.5."));
      await sb.locator("#send").click();
      await turnDone(page, model);
      const reqs = await model.requests();
      const body = JSON.stringify(reqs.at(-1).body);
      for (const want of ["@df (a variable of the kernel)", "revenue", "region", "Describe @df"]) {
        assert.ok(body.includes(want), "the request lacks " + want + ": " + body.slice(0, 3000));
      }
      await sb.locator("#timeline .msg.user").filter({ hasText: "Describe @df" }).waitFor({ timeout: TIMEOUT });
      await steps.shot(page, "02-sent");
    });
  } finally {
    await browser.close();
  }
}

runTest(steps, "ak-mention-", run);
