// Browser test of issue 35's MCP item: an outside MCP client (npm's
// @modelcontextprotocol/sdk, as Claude Code or an inspector would be) works
// on the notebook open in JupyterLab 4. A cell `%agent mcp serve` prints the
// kernel's MCP server's loopback URL and token; the client connects over
// streamable HTTP with the bearer token, reads the open notebook
// (notebook_read: its markdown cell's text) and inserts a code cell
// (notebook_insert_cell), which appears in the page without a reload,
// through the notebook comm. A wrong token is 401; `%agent mcp stop` ends
// the server. A second page on the notebook that goes (its tab closed, or
// its browser) leaves the calls answered by the first page. Run through run.sh (LAB_PYTHON, AGENTKERNEL_BIN, SCRIPTED_BIN,
// LAB_EXTENSION); screenshots go to tests/artifacts/mcpnotebook-*.png.
import { mkdtempSync } from "node:fs";
import { join } from "node:path";
import assert from "node:assert/strict";
import { chromium } from "playwright-core";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CHROMIUM_ARGS, Steps, TIMEOUT, commOpen, labWorld, runTest, setting, startJupyter, until, writeNotebook,
} from "./jupyterkit.mjs";

const steps = new Steps("mcpnotebook");
const step = (name, fn) => steps.step(name, fn);

// MARK is in the notebook's markdown cell; SOURCE is the cell the client
// inserts: neither is anywhere else.
const MARK = "Totals by region, served over MCP " + Math.random().toString(36).slice(2);
const SOURCE = "inserted_by_mcp_client = " + Math.floor(Math.random() * 1e9);

const cells = (page) => page.locator(".jp-Notebook .jp-Cell");

/** The text of a tool result's text contents. */
const textOf = (res) => (res.content || []).filter((c) => c.type === "text").map((c) => c.text).join("");

async function run(tmp) {
  const { env, work } = await labWorld(tmp);
  setting(tmp, "@agentkernel/jupyterlab:plugin", { autoOpen: false });
  writeNotebook(join(work, "served.ipynb"), "agent-code", "Agent (code)", [
    { id: "intro", cell_type: "markdown", metadata: {}, source: "# Sales\n" + MARK },
    { id: "serve-here", cell_type: "code", metadata: {}, source: "", outputs: [], execution_count: null },
  ]);
  const lab = await startJupyter({ python: process.env.LAB_PYTHON, app: "jupyterlab", tmp, env,
    args: ["--LabApp.expose_app_in_browser=True"] });
  const browser = await chromium.launchPersistentContext(mkdtempSync(join(tmp, "chromium-")), {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium", headless: true, args: CHROMIUM_ARGS,
    viewport: { width: 1400, height: 900 },
  });
  let client;
  try {
    const page = await browser.newPage();
    steps.page = page;
    page.on("pageerror", (e) => steps.log("page error:", e.message));
    let url, token;

    await step("a cell %agent mcp serve prints the kernel's MCP server's URL, token and claude mcp add line", async () => {
      await page.goto(`${lab.base}/lab/tree/served.ipynb?token=${lab.token}`);
      await cells(page).first().waitFor({ timeout: TIMEOUT });
      await commOpen(page);
      const cell = cells(page).nth(1);
      await cell.locator(".cm-content").click();
      await page.keyboard.insertText("%agent mcp serve");
      await page.keyboard.press("Control+Enter");
      const out = cell.locator(".jp-OutputArea-output", { hasText: "token:" });
      await out.waitFor({ timeout: TIMEOUT });
      const text = await out.innerText();
      const m = /URL: (http:\/\/127\.0\.0\.1:\d+\/mcp)\s+token: ([0-9a-f]+)/.exec(text);
      assert.ok(m, text);
      [, url, token] = m;
      assert.ok(text.includes(`claude mcp add --transport http agentkernel ${url} --header "Authorization: Bearer ${token}"`), text);
      await steps.shot(page, "served");
    });

    await step("a wrong token is refused (401)", async () => {
      const r = await fetch(url, {
        method: "POST", body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
        headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream", Authorization: "Bearer wrong" },
      });
      assert.equal(r.status, 401);
    });

    await step("npm's MCP client connects with the token and is offered the notebook tools", async () => {
      client = new Client({ name: "mcpnotebook-test", version: "1.0.0" });
      await client.connect(new StreamableHTTPClientTransport(new URL(url), {
        requestInit: { headers: { Authorization: "Bearer " + token } },
      }));
      const { tools } = await client.listTools();
      const names = tools.map((t) => t.name);
      for (const want of ["execute_code", "notebook_read", "notebook_insert_cell", "notebook_edit_cell"]) {
        assert.ok(names.includes(want), `tools ${names} lack ${want}`);
      }
    });

    await step("notebook_read reads the notebook open in the page", async () => {
      const res = await client.callTool({ name: "notebook_read", arguments: {} });
      assert.ok(!res.isError && textOf(res).includes(MARK), textOf(res));
    });

    await step("notebook_insert_cell's cell appears in the page without a reload", async () => {
      const before = await cells(page).count();
      const res = await client.callTool({ name: "notebook_insert_cell", arguments: { source: SOURCE } });
      assert.ok(!res.isError, textOf(res));
      await cells(page).locator(".cm-content", { hasText: SOURCE }).waitFor({ timeout: TIMEOUT });
      assert.equal(await cells(page).count(), before + 1);
      await steps.shot(page, "inserted");
    });

    // A second page on the notebook, opened last (the one an MCP call,
    // which no page sent, is routed to), then gone: by File > Close Tab,
    // or with its whole browser. The next call is answered by the first
    // page (issue 41, item 13), not "the frontend did not answer in 30s".
    for (const how of ["File > Close Tab", "its browser closed"]) {
      await step(`a second page on the notebook goes (${how}): the next notebook_read is answered by the first page`, async () => {
        const other = how === "File > Close Tab" ? browser : await chromium.launchPersistentContext(mkdtempSync(join(tmp, "chromium-")), {
          executablePath: process.env.CHROMIUM || "/usr/bin/chromium", headless: true, args: CHROMIUM_ARGS,
          viewport: { width: 1400, height: 900 },
        });
        let p2;
        try {
          p2 = await other.newPage();
          steps.page = p2; // the one a failure's screenshot shows
          const sent = []; // what the page sent the kernel, as text
          p2.on("websocket", (ws) => ws.on("framesent", (f) => sent.push(typeof f.payload === "string" ? f.payload : Buffer.from(f.payload).toString("utf8"))));
          await p2.goto(`${lab.base}/lab/tree/served.ipynb?token=${lab.token}`);
          await cells(p2).first().waitFor({ timeout: TIMEOUT });
          await commOpen(p2);
          if (how === "File > Close Tab") {
            await p2.locator(".lm-MenuBar-itemLabel", { hasText: /^File$/ }).click();
            await p2.locator(".lm-Menu-itemLabel", { hasText: /^Close Tab$/ }).click();
            // The page's notebook is marked changed on load: close it unsaved.
            await p2.locator(".jp-Dialog button", { hasText: /^Discard$/ }).click();
            await until("the tab to close", async () => (await p2.locator(".jp-NotebookPanel:visible").count()) === 0);
            // The page said so: its notebook comm's comm_close went out.
            const opened = sent.find((f) => f.includes('"target_name":"agentkernel.notebook"'));
            const id = opened && /"comm_id":"([^"]+)"/.exec(opened)[1];
            assert.ok(id, "the page opened no notebook comm");
            await until("the notebook comm's comm_close", async () => sent.some((f) => f.includes("comm_close") && f.includes(id)));
          } else {
            await other.close();
          }
          const res = await client.callTool({ name: "notebook_read", arguments: {} });
          assert.ok(!res.isError && textOf(res).includes(MARK), textOf(res));
        } finally {
          steps.page = page;
          if (how === "File > Close Tab") await p2?.close();
          else await other.close().catch(() => {});
        }
      });
    }

    await step("%agent mcp stop ends the server", async () => {
      await client.close();
      client = undefined;
      // In the cell that served it (the inserted cell is the client's).
      const cell = await cells(page).filter({ has: page.locator(".cm-content", { hasText: "%agent mcp serve" }) }).elementHandle();
      await (await cell.$(".cm-content")).click();
      await page.keyboard.press("Control+A");
      await page.keyboard.insertText("%agent mcp stop");
      await page.keyboard.press("Control+Enter");
      await cell.waitForSelector('.jp-OutputArea-output:has-text("stopped")', { timeout: TIMEOUT });
      await until("the server to be gone", async () => {
        try {
          await fetch(url, { method: "POST", body: "{}" });
          return false;
        } catch (e) {
          return true;
        }
      });
    });
  } finally {
    if (client) await client.close().catch(() => {});
    await browser.close();
  }
}

runTest(steps, "agentkernel-mcpnotebook-", run);
