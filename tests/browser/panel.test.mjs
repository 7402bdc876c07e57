// Browser tests of the web panel: a real agentkernel prompt-mode kernel
// (harness/, with the scripted model server) and Debian's chromium driven
// by playwright-core. Run through run.sh. Screenshots go to tests/artifacts/.
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import assert from "node:assert/strict";
import { chromium } from "playwright-core";

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, "..", "..");
const artifacts = join(repo, "tests", "artifacts");
mkdirSync(artifacts, { recursive: true });
const TIMEOUT = 30000;

function log(...a) { console.log("[panel]", ...a); }

// ---- the harness ----

async function startHarness() {
  const bin = process.env.HARNESS_BIN;
  const child = bin
    ? spawn(bin, [], { stdio: ["ignore", "pipe", "inherit"] })
    : spawn("go", ["run", "./tests/browser/harness"], { cwd: repo, stdio: ["ignore", "pipe", "inherit"] });
  const rl = createInterface({ input: child.stdout });
  const first = await new Promise((resolve, reject) => {
    rl.once("line", resolve);
    child.once("exit", (code) => reject(new Error("harness exited with " + code)));
  });
  const { control } = JSON.parse(first);
  return { child, control };
}

let H;
async function call(method, path, body) {
  const r = await fetch(H.control + path, {
    method, headers: { "content-type": "application/json" }, body: body ? JSON.stringify(body) : undefined,
  });
  const text = await r.text();
  if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${text}`);
  return JSON.parse(text);
}
const enqueue = (...turns) => call("POST", "/enqueue", { turns });
let cellN = 0;
async function execute(code) { const id = "cell" + (++cellN); await call("POST", "/execute", { id, code }); return id; }
const cell = (id) => call("GET", "/cell?id=" + id);
const stdin = (id, value) => call("POST", "/stdin", { id, value });
const requests = () => call("GET", "/requests");
const writeFile = (path, content) => call("POST", "/file", { path, content });
const readFile = (path) => call("GET", "/file?path=" + encodeURIComponent(path));

async function until(what, fn, timeout = TIMEOUT) {
  const end = Date.now() + timeout;
  let last;
  while (Date.now() < end) {
    last = await fn();
    if (last) return last;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error("timed out waiting for " + what + (last !== undefined ? " (last: " + JSON.stringify(last) + ")" : ""));
}
const cellDone = (id) => until("cell " + id + " to finish", async () => { const c = await cell(id); return c.done && c.status !== "" ? c : null; });
const cellWaiting = (id) => until("cell " + id + " to ask on stdin", async () => { const c = await cell(id); return c.waiting ? c : null; });

function outputsText(c) {
  return c.outputs.map((o) => {
    const d = o.content.data || {};
    return (o.content.text || "") + (d["text/plain"] || "") + (d["text/markdown"] || "") + (o.content.evalue || "");
  }).join("\n");
}

// ---- the browser ----

const CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
  "--disable-component-update", "--disable-sync"];

async function shot(page, name) {
  await page.screenshot({ path: join(artifacts, name + ".png"), fullPage: false });
}

// What a person sees of the panel, read from its DOM (the page has no test
// hook): the session (the title's tooltip), the messages of the timeline,
// the attached images' tray.
const sessionId = (p) => p.evaluate(() => (document.getElementById("title").title || "").replace(/^Session /, ""));
const timeline = (p) => p.$$eval("#timeline article.msg", (a) => a.map((n) => [n.dataset.ts, n.dataset.kind, n.classList.contains("partial"), n.textContent]));
const tray = (p) => p.$$eval("#attachments .attachment img", (a) => a.map((i) => i.src));

const results = [];
async function step(name, fn) {
  const t0 = Date.now();
  try {
    await fn();
    results.push({ name, ok: true, ms: Date.now() - t0 });
    log("ok  ", name, `(${Date.now() - t0} ms)`);
  } catch (e) {
    results.push({ name, ok: false, error: e });
    log("FAIL", name, "\n", e && e.stack || e);
    throw e;
  }
}

async function main() {
  H = await startHarness();
  const profile = mkdtempSync(join(tmpdir(), "ak-chromium-"));
  // A fresh --user-data-dir: playwright-core passes it for a persistent context.
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: CHROMIUM_ARGS.filter((a) => a !== "--headless"),
  });
  let url;
  try {
    const narrow = await browser.newPage();
    await narrow.setViewportSize({ width: 400, height: 760 });
    const wide = await browser.newPage();
    await wide.setViewportSize({ width: 1280, height: 800 });
    const dialogs = [];
    for (const p of [narrow, wide]) {
      p.on("dialog", async (d) => {
        dialogs.push({ type: d.type(), message: d.message() });
        if (d.type() === "confirm") await d.accept(); else await d.dismiss();
      });
      p.on("pageerror", (e) => log("page error:", e.message));
    }

    await step("%agent webview shows the URL as a link and an IFrame", async () => {
      const id = await execute("%agent webview");
      const c = await cellDone(id);
      assert.equal(c.status, "ok");
      const disp = c.outputs.find((o) => o.msg_type === "display_data");
      assert.ok(disp, "no display_data: " + JSON.stringify(c.outputs));
      const html = disp.content.data["text/html"];
      url = disp.content.data["text/plain"].replace(/^Web panel: /, "");
      assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/\?token=[0-9a-f]{64}$/);
      assert.ok(html.includes("<iframe") && html.includes(url.replace(/&/g, "&amp;")), html);
    });

    await step("the page and socket need the token", async () => {
      const bad = await fetch(url.replace(/token=[0-9a-f]+/, "token=nope"));
      assert.equal(bad.status, 401);
      const none = await fetch(url.replace(/\?token=[0-9a-f]+/, ""));
      assert.equal(none.status, 401);
    });

    await step("open the panel (narrow and wide)", async () => {
      await narrow.goto(url);
      await wide.goto(url);
      for (const p of [narrow, wide]) await p.waitForSelector("#status.status-idle", { timeout: TIMEOUT });
      await shot(narrow, "01-empty-narrow");
    });

    await step("%agent mcp starts the MCP servers; the panel shows them", async () => {
      const c = await cellDone(await execute("%agent mcp"));
      assert.equal(c.status, "ok");
      const out = c.outputs.filter((o) => o.msg_type === "stream").map((o) => o.content.text).join("");
      assert.match(out, /everything: ready \(stdio, project\)/);
      for (const p of [narrow, wide]) {
        await p.waitForSelector("#mcpSummary >> text=MCP servers: 1 of 1 ready", { timeout: TIMEOUT });
      }
      await wide.click("#mcpSummary");
      await wide.waitForSelector(".mcp-server.mcp-ready >> text=mcp__everything__echo", { timeout: TIMEOUT });
      await shot(wide, "01b-mcp-servers-wide");
    });

    await step("a notebook prompt streams into the panel", async () => {
      await enqueue([{ reasoning: ["Thinking about ", "greetings."] }, { text: ["# Hello", ", panel!\n\n", "- one\n- **two**\n\n```python\nprint('hi')\n```\n"] },
        { delayMs: 300 }, { text: ["Streaming done."] }, { usage: { input: 120, output: 30 } }]);
      const id = await execute("Say hello to the panel");
      for (const p of [narrow, wide]) {
        await p.waitForSelector("article.msg.user >> text=Say hello to the panel", { timeout: TIMEOUT });
        await p.waitForSelector("article.model h1 >> text=Hello, panel!", { timeout: TIMEOUT });
      }
      await shot(wide, "02-streaming-wide");
      const c = await cellDone(id);
      assert.equal(c.status, "ok");
      for (const p of [narrow, wide]) {
        await p.waitForSelector("text=Streaming done.", { timeout: TIMEOUT });
        await p.waitForSelector("details.reasoning >> text=Reasoning", { timeout: TIMEOUT });
        await p.waitForFunction(() => /120 in/.test(document.getElementById("totals").textContent), null, { timeout: TIMEOUT });
      }
      assert.ok(await wide.$("article.model ul li strong"), "markdown list with bold");
      assert.ok(await wide.$("article.model pre code.language-python"), "fenced code");
    });

    await step("approve an ask from the panel; the notebook cell continues", async () => {
      await enqueue(
        [{ text: ["Let me compute that."] }, { tool: { id: "call_1", name: "execute_code", args: JSON.stringify({ code: "print(6*7)" }) } }],
        [{ text: ["The answer is 42."] }],
      );
      const id = await execute("What is six times seven?");
      await cellWaiting(id); // the notebook shows an input prompt
      for (const p of [narrow, wide]) await p.waitForSelector("#ask:not([hidden])[data-ask=command]", { timeout: TIMEOUT });
      await shot(narrow, "03-ask-narrow");
      await shot(wide, "03-ask-wide");
      await narrow.click("#approve");
      // Closed everywhere: both panels.
      for (const p of [narrow, wide]) {
        await p.waitForSelector("#ask", { state: "hidden", timeout: TIMEOUT });
        await p.waitForSelector("article.output pre.out >> text=42", { timeout: TIMEOUT });
        await p.waitForSelector("text=The answer is 42.", { timeout: TIMEOUT });
      }
      // The notebook's prompt is answered late (the panel won): ignored.
      const c0 = await cell(id);
      if (c0.waiting) await stdin(id, "n");
      const c = await cellDone(id);
      assert.equal(c.status, "ok", JSON.stringify(c));
      const out = outputsText(c);
      assert.ok(out.includes("42"), "code output in the notebook: " + out);
      assert.ok(out.includes("The answer is 42."), "the model's answer in the notebook: " + out);
      const reqs = await requests();
      assert.ok(reqs[reqs.length - 1].all.includes("42"), "the tool result went to the model");
      await shot(wide, "04-approved-wide");
    });

    await step("approve an MCP tool from the panel; its result reaches the cell and the model", async () => {
      await enqueue(
        [{ tool: { id: "call_mcp", name: "mcp__everything__echo", args: JSON.stringify({ message: "hello over MCP" }) } }],
        [{ text: ["The server echoed it."] }],
      );
      const id = await execute("Echo something with the MCP server.");
      await cellWaiting(id);
      for (const p of [narrow, wide]) {
        await p.waitForSelector("#ask:not([hidden])[data-ask=use_mcp_server]", { timeout: TIMEOUT });
        await p.waitForSelector("#askText >> text=Allow the MCP tool echo of everything?", { timeout: TIMEOUT });
      }
      await wide.click("#approve");
      for (const p of [narrow, wide]) {
        await p.waitForSelector("#ask", { state: "hidden", timeout: TIMEOUT });
        await p.waitForSelector("article.output pre.out >> text=Echo: hello over MCP", { timeout: TIMEOUT });
      }
      const c0 = await cell(id);
      if (c0.waiting) await stdin(id, "n");
      const c = await cellDone(id);
      assert.equal(c.status, "ok", JSON.stringify(c));
      assert.ok(outputsText(c).includes("Echo: hello over MCP"), "the MCP result in the notebook: " + outputsText(c));
      const reqs = await requests();
      assert.ok(reqs[reqs.length - 1].all.includes("Echo: hello over MCP"), "the MCP result went to the model");
      await shot(wide, "04b-mcp-approved-wide");
    });

    await step("a text typed at an MCP tool's ask answers that ask: denied, with the words for the model", async () => {
      await enqueue(
        [{ tool: { id: "call_mcp2", name: "mcp__everything__echo", args: JSON.stringify({ message: "not wanted" }) } }],
        [{ text: ["Understood, no echo."] }],
      );
      const id = await execute("Echo something else with the MCP server.");
      await cellWaiting(id);
      for (const p of [narrow, wide]) await p.waitForSelector("#ask:not([hidden])[data-ask=use_mcp_server]", { timeout: TIMEOUT });
      assert.equal(await wide.getAttribute("#prompt", "placeholder"), "Or type feedback to deny with a reason…");
      await wide.fill("#prompt", "No echo now, please");
      await wide.press("#prompt", "Enter");
      for (const p of [narrow, wide]) {
        await p.waitForSelector("#ask", { state: "hidden", timeout: TIMEOUT });
        await p.waitForSelector("article.msg.user >> text=No echo now, please", { timeout: TIMEOUT });
        await p.waitForSelector("text=Understood, no echo.", { timeout: TIMEOUT });
      }
      const c0 = await cell(id);
      if (c0.waiting) await stdin(id, "n");
      const c = await cellDone(id);
      assert.equal(c.status, "ok", JSON.stringify(c));
      assert.ok(!outputsText(c).includes("Echo: not wanted"), "the tool ran: " + outputsText(c));
      // The panel answered the ask itself (askResponse, by "webview"), not
      // with a new prompt that the agent took as the answer.
      const reqs = await requests();
      assert.match(reqs[reqs.length - 1].all, /Permission denied[^"]*\(webview\)\. The user said: No echo now, please/);
      await shot(wide, "04c-mcp-denied-by-text-wide");
    });

    await step("answer in the notebook; the panel's ask closes", async () => {
      await enqueue(
        [{ tool: { id: "call_2", name: "execute_code", args: JSON.stringify({ code: "print('from stdin approval')" }) } }],
        [{ text: ["Ran it after your approval in the notebook."] }],
      );
      const id = await execute("Print something, please");
      for (const p of [narrow, wide]) await p.waitForSelector("#ask:not([hidden])[data-ask=command]", { timeout: TIMEOUT });
      await cellWaiting(id);
      await stdin(id, "y");
      for (const p of [narrow, wide]) {
        await p.waitForSelector("#ask", { state: "hidden", timeout: TIMEOUT });
        await p.waitForSelector("article.askmsg.answered", { timeout: TIMEOUT });
        await p.waitForSelector("text=Ran it after your approval in the notebook.", { timeout: TIMEOUT });
      }
      const c = await cellDone(id);
      assert.equal(c.status, "ok");
    });

    await step("rewind from the panel; notebook and next model request agree", async () => {
      const prompt = "article.msg.user >> text=Print something, please";
      await wide.hover(prompt);
      const art = await wide.$(prompt);
      const box = await art.evaluateHandle((n) => n.closest("article"));
      const btn = await box.$("button.rewind");
      await btn.click();
      await wide.waitForSelector("#rewindDialog:not([hidden])", { timeout: TIMEOUT });
      await wide.click("#rwDo");
      await wide.waitForSelector("#rewindReport:not([hidden])", { timeout: TIMEOUT });
      for (const p of [narrow, wide]) {
        await p.waitForSelector(prompt, { state: "detached", timeout: TIMEOUT });
        await p.waitForSelector("text=The answer is 42.", { timeout: TIMEOUT });
      }
      const hid = await execute("%agent history");
      const h = await cellDone(hid);
      const hist = outputsText(h);
      assert.ok(!hist.includes("Print something"), "notebook history still has the rewound prompt:\n" + hist);
      assert.ok(hist.includes("six times seven"), hist);
      await enqueue([{ text: ["Fresh start after the rewind."] }]);
      const id = await execute("After the rewind");
      const c = await cellDone(id);
      assert.equal(c.status, "ok");
      const reqs = await requests();
      const last = reqs[reqs.length - 1].all;
      assert.ok(!last.includes("Print something") && !last.includes("from stdin approval"), "rewound messages sent to the model");
      assert.ok(last.includes("six times seven") && last.includes("After the rewind"), "kept history missing");
      for (const p of [narrow, wide]) await p.waitForSelector("text=Fresh start after the rewind.", { timeout: TIMEOUT });
      const texts = await wide.$$eval("article.msg.user", (a) => a.map((n) => n.textContent));
      assert.ok(texts.some((t) => t.includes("After the rewind")) && !texts.some((t) => t.includes("Print something")), texts.join("|"));
      await shot(wide, "05-rewound-wide");
    });

    await step("rewind choices: files go back, a conflict is kept and shown; fork from here", async () => {
      await writeFile("b.txt", "b before");
      await enqueue(
        [{ tool: { id: "call_w1", name: "write_file", args: JSON.stringify({ path: "a.txt", content: "a by the agent" }) } }],
        [{ tool: { id: "call_w2", name: "write_file", args: JSON.stringify({ path: "b.txt", content: "b by the agent" }) } }],
        [{ text: ["Wrote a.txt and b.txt."] }],
      );
      const id = await execute("Write the two files");
      for (let i = 0; i < 2; i++) { await cellWaiting(id); await stdin(id, "y"); }
      const c = await cellDone(id);
      assert.equal(c.status, "ok", JSON.stringify(c));
      assert.equal((await readFile("a.txt")).content, "a by the agent");
      await writeFile("b.txt", "b edited by the user"); // after the agent: a conflict
      const prompt = "article.msg.user >> text=Write the two files";
      await wide.waitForSelector(prompt, { timeout: TIMEOUT });
      await wide.hover(prompt);
      const box = await (await wide.$(prompt)).evaluateHandle((n) => n.closest("article"));
      await (await box.$("button.rewind")).click();
      await wide.waitForSelector("#rewindDialog:not([hidden])", { timeout: TIMEOUT });
      await shot(wide, "05b-rewind-choices-wide");
      await wide.uncheck("#rwKernel");
      await wide.click("#rwDo");
      await wide.waitForSelector("#rewindReport:not([hidden]) li.conflict >> text=b.txt", { timeout: TIMEOUT });
      const summary = await wide.textContent("#rwSummary");
      assert.match(summary, /Files: 0 restored, 1 removed/, summary);
      assert.ok(!/Kernel: restarted/.test(summary), "the kernel was left alone: " + summary);
      await shot(wide, "05c-rewind-report-wide");
      assert.equal((await readFile("a.txt")).exists, false, "a.txt (created after the point) is gone");
      assert.equal((await readFile("b.txt")).content, "b edited by the user", "the user's edit is kept");
      for (const p of [narrow, wide]) await p.waitForSelector(prompt, { state: "detached", timeout: TIMEOUT });
      await wide.click("#rwClose");

      // Fork from a later message: a new session, the original kept.
      await enqueue([{ text: ["First branch answer."] }]);
      const fid = await execute("A question to branch from");
      assert.equal((await cellDone(fid)).status, "ok");
      const before = await sessionId(wide);
      assert.match(before, /^[0-9a-f-]{8,}$/, "the title's tooltip names the session");
      const fprompt = "article.msg.user >> text=A question to branch from";
      await wide.waitForSelector(fprompt, { timeout: TIMEOUT });
      await wide.hover(fprompt);
      const fbox = await (await wide.$(fprompt)).evaluateHandle((n) => n.closest("article"));
      await (await fbox.$("button.rewind")).click();
      await wide.waitForSelector("#rewindDialog:not([hidden])", { timeout: TIMEOUT });
      await wide.click("#rwFork");
      await until("the forked session in the header", async () => (await sessionId(wide)) !== before);
      await wide.waitForSelector(fprompt, { state: "detached", timeout: TIMEOUT });
      await wide.waitForSelector("#rewindReport:not([hidden])", { timeout: TIMEOUT });
      const hid = await execute("%agent sessions");
      const listing = outputsText(await cellDone(hid));
      assert.ok(listing.includes(before.slice(0, 8)), "the original session is still listed:\n" + listing);
      await wide.click("#rwClose");
    });

    await step("a model reply full of XSS payloads executes nothing", async () => {
      const payloads = [
        "<script>window.__xss='script';alert('xss-script')</script>",
        "<img src=x onerror=\"window.__xss='img';alert('xss-img')\">",
        "<svg/onload=alert('xss-svg')>",
        "<iframe src=\"javascript:alert('xss-iframe')\"></iframe>",
        "<a href=\"javascript:alert('xss-a')\">html link</a>",
        "[md js link](javascript:window.__xss='mdlink')",
        "[mixed case](JaVaScRiPt:alert('xss-case'))",
        "[tab inside](java\tscript:alert('xss-tab'))",
        "[data link](data:text/html;base64,PHNjcmlwdD5hbGVydCgneHNzLWRhdGEnKTwvc2NyaXB0Pg==)",
        "[vb](vbscript:msgbox(1))",
        "![image](x\" onerror=\"alert('xss-imgmd'))",
        "**<b onmouseover=alert('xss-b')>bold</b>**",
        "`<script>alert('xss-code')</script>`",
        "<style>body{display:none}</style>",
        "<details open ontoggle=alert('xss-details')>",
        "[ok link](https://example.com/safe?a=1&b=2) and <https://example.org/auto>",
      ].join("\n\n");
      await enqueue([{ text: ["## Payloads\n\n", payloads, "\n\nEnd of payloads."] }]);
      // Sent from the panel's prompt box this time (newTask), by clicking Send.
      await narrow.fill("#prompt", "Show me some HTML");
      await narrow.click("#send");
      for (const p of [narrow, wide]) await p.waitForSelector("text=End of payloads.", { timeout: TIMEOUT });
      for (const p of [narrow, wide]) {
        // Hover everything and click the links: still nothing runs.
        for (const a of await p.$$("article.model a")) { await a.hover(); }
        const report = await p.evaluate(() => {
          const tl = document.getElementById("timeline");
          const tags = new Set([...tl.querySelectorAll("article.model .markdown *")].map((n) => n.tagName.toLowerCase()));
          const onAttrs = [...tl.querySelectorAll("*")].flatMap((n) => [...n.attributes].filter((a) => /^on/i.test(a.name)).map((a) => a.name));
          const hrefs = [...tl.querySelectorAll("a")].map((a) => a.getAttribute("href"));
          return { xss: window.__xss, tags: [...tags], onAttrs, hrefs,
            scripts: document.querySelectorAll("script").length, bodyVisible: getComputedStyle(document.body).display !== "none" };
        });
        assert.equal(report.xss, undefined, "a payload ran");
        assert.deepEqual(report.onAttrs, [], "event handler attributes in the DOM");
        const allowed = new Set(["p", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "del", "code", "pre", "ul", "ol", "li", "blockquote", "hr", "br", "a"]);
        for (const t of report.tags) assert.ok(allowed.has(t), "unexpected element <" + t + ">");
        for (const h of report.hrefs) assert.match(h, /^(https?:|mailto:)/, "unsafe href " + h);
        assert.ok(report.hrefs.includes("https://example.com/safe?a=1&b=2"), "the safe link is kept");
        assert.equal(report.scripts, 1, "only the panel's own script");
        assert.ok(report.bodyVisible);
        // The payloads are shown as text.
        await p.waitForSelector("article.model >> text=<script>window.__xss='script';alert('xss-script')</script>", { timeout: TIMEOUT });
      }
      const alerts = dialogs.filter((d) => d.type !== "confirm");
      assert.deepEqual(alerts, [], "dialogs opened: " + JSON.stringify(alerts));
      await shot(narrow, "06-xss-narrow");
      await shot(wide, "06-xss-wide");
    });

    await step("the markdown renderer only makes whitelisted nodes", async () => {
      // Each case a paragraph of one model reply, as the panel renders it.
      const cases = ["<img src=x onerror=alert(1)>", "[a](javascript:alert(1))", "[a]( javascript:alert(1))",
        "[a](&#106;avascript:alert(1))", "<a href=javascript:alert(1)>x</a>", "***nested _em_ `code`***"];
      await enqueue([{ text: [cases.join("\n\n") + "\n\nEnd of the cases."] }]);
      await wide.fill("#prompt", "Show me the markdown cases");
      await wide.click("#send");
      const reply = wide.locator("article.model", { hasText: "End of the cases." });
      await reply.waitFor({ timeout: TIMEOUT });
      const out = await reply.evaluate((art) => [...art.querySelectorAll(".markdown > p")].slice(0, -1).map((p) => {
        const els = [...p.querySelectorAll("*")];
        return { c: p.textContent, tags: els.map((n) => n.tagName.toLowerCase()),
          attrs: els.flatMap((n) => [...n.attributes].map((a) => a.name + "=" + a.value)) };
      }));
      assert.equal(out.length, cases.length, JSON.stringify(out));
      const allowedAttrs = /^(href=(https?:|mailto:)|target=_blank$|rel=|class=language-|start=\d+$)/;
      for (const r of out) {
        for (const t of r.tags) assert.ok(["strong", "em", "code", "a", "br"].includes(t), r.c + " made <" + t + ">");
        for (const a of r.attrs) assert.match(a, allowedAttrs, r.c + " made attribute " + a);
      }
      for (const t of ["strong", "em", "code"]) assert.ok(out[5].tags.includes(t), "nested emphasis: " + out[5].tags);
    });

    await step("sessions list and search", async () => {
      await wide.click("#sessionsBtn");
      await wide.waitForSelector("#sessionList li.current", { timeout: TIMEOUT });
      await wide.fill("#sessionQuery", "seven");
      await wide.click("#sessions button >> text=Search");
      await wide.waitForSelector("#searchHits li >> text=/^Session /", { timeout: TIMEOUT });
      await shot(wide, "07-sessions-wide");
      await wide.fill("#sessionQuery", "zebra");
      await wide.press("#sessionQuery", "Enter");
      await wide.waitForSelector("#searchHits li >> text=No messages match.", { timeout: TIMEOUT });
      await wide.click("#sessionsBtn");
    });

    await step("the panel follows the browser's colour scheme; its header is whole at 400 px", async () => {
      const look = (p) => p.evaluate(() => ({ bg: getComputedStyle(document.body).backgroundColor,
        scheme: getComputedStyle(document.documentElement).colorScheme }));
      await narrow.emulateMedia({ colorScheme: "dark" });
      assert.deepEqual(await look(narrow), { bg: "rgb(13, 17, 23)", scheme: "light dark" });
      await shot(narrow, "07b-dark-narrow");
      await narrow.emulateMedia({ colorScheme: "light" });
      assert.deepEqual(await look(narrow), { bg: "rgb(255, 255, 255)", scheme: "light dark" });
      await narrow.waitForFunction(() => /\$\d/.test(document.getElementById("totals").textContent), null, { timeout: TIMEOUT });
      const h = await narrow.evaluate(() => {
        const bar = document.getElementById("bar");
        return { width: innerWidth, docScroll: document.documentElement.scrollWidth, barScroll: bar.scrollWidth, barClient: bar.clientWidth,
          parts: [...bar.children].map((n) => { const r = n.getBoundingClientRect(); return [n.id, r.left, r.right, n.scrollWidth, n.clientWidth]; }) };
      });
      assert.ok(h.docScroll <= h.width && h.barScroll <= h.barClient, JSON.stringify(h));
      for (const [id, left, right, sw, cw] of h.parts) {
        assert.ok(left >= 0 && right <= h.width + 0.5, id + " is cut: " + JSON.stringify(h));
        if (id === "totals") assert.ok(sw <= cw, "the totals are cut: " + JSON.stringify(h));
      }
    });

    await step("a reconnecting client gets the full state", async () => {
      const before = await timeline(narrow);
      assert.ok(before.length > 10, before.length + " messages shown");
      await narrow.reload();
      await narrow.waitForSelector("#status.status-idle", { timeout: TIMEOUT });
      await until("the messages after the reload", async () => (await timeline(narrow)).length === before.length);
      assert.deepEqual(await timeline(narrow), before, "the reloaded panel shows other messages");
      assert.deepEqual(await timeline(wide), before, "two panels disagree");
      await shot(narrow, "08-final-narrow");
      await shot(wide, "08-final-wide");
    });

    await step("the first prompt names the session in the panel header", async () => {
      const sid0 = await sessionId(wide);
      assert.equal((await cellDone(await execute("%agent new"))).status, "ok");
      // The new session reaches the panel as a state frame, maybe after the cell's reply.
      await until("the new session in the header", async () => (await sessionId(wide)) !== sid0);
      const sid = await sessionId(wide);
      assert.equal((await timeline(wide)).length, 0, "the new session shows messages");
      await enqueue([{ text: ["A plan follows."] }]);
      assert.equal((await cellDone(await execute("Plan the garden layout"))).status, "ok");
      for (const p of [narrow, wide]) {
        await p.waitForFunction(() => document.getElementById("title").textContent === "Plan the garden layout", null, { timeout: TIMEOUT });
      }
      assert.equal(await sessionId(wide), sid, "the same session");
      await shot(wide, "09-title-wide");
    });

    await step("%agent title renames the session in the panel header; the panel switches the agent mode", async () => {
      assert.equal((await cellDone(await execute("%agent title Garden plan, second draft"))).status, "ok");
      for (const p of [narrow, wide]) {
        await p.waitForFunction(() => document.getElementById("title").textContent === "Garden plan, second draft", null, { timeout: TIMEOUT });
      }
      // The mode's one control is the settings view's (the header has none).
      await wide.click("#settingsBtn");
      await wide.waitForSelector("#settingsView:not([hidden])", { timeout: TIMEOUT });
      const modes = await wide.evaluate(() => [...document.querySelectorAll("#svAgentMode option")].map((o) => o.value));
      for (const m of ["code", "ask", "architect", "debug"]) assert.ok(modes.includes(m), "agent modes offered: " + modes);
      await wide.selectOption("#svAgentMode", "architect");
      await narrow.waitForFunction(() => document.getElementById("svAgentMode").value === "architect", null, { timeout: TIMEOUT });
      const c = await cellDone(await execute("%agent mode"));
      const shown = c.outputs.map((o) => (o.content.text || (o.content.data && o.content.data["text/plain"]) || "")).join("");
      assert.match(shown, /Mode: architect/, shown);
      assert.equal((await cellDone(await execute("%agent mode code"))).status, "ok");
      await wide.waitForFunction(() => document.getElementById("svAgentMode").value === "code", null, { timeout: TIMEOUT });
      await wide.click("#settingsBtn");
    });

    await step("a followup question answered from the panel; the notebook cell continues", async () => {
      const question = { question: "Which flowers should it have?", suggestions: ["roses", "tulips"] };
      await enqueue([{ tool: { id: "f1", name: "ask_followup_question", args: JSON.stringify(question) } }],
        [{ text: ["Tulips it is."] }]);
      const id = await execute("Pick flowers for me");
      const w = await cellWaiting(id); // asked on the notebook's stdin too
      assert.ok(w.prompts[0].includes("Which flowers should it have?"), JSON.stringify(w.prompts));
      for (const p of [narrow, wide]) await p.waitForSelector("#ask:not([hidden])[data-ask=followup]", { timeout: TIMEOUT });
      await shot(wide, "10-followup-wide");
      await wide.click("#askSuggest button.suggestion >> text=tulips");
      for (const p of [narrow, wide]) {
        await p.waitForSelector("#ask", { state: "hidden", timeout: TIMEOUT });
        await p.waitForSelector("text=Tulips it is.", { timeout: TIMEOUT });
      }
      const c0 = await cell(id);
      if (c0.waiting) await stdin(id, "ignored: the panel answered first");
      const c = await cellDone(id);
      assert.equal(c.status, "ok", JSON.stringify(c));
      assert.ok(outputsText(c).includes("Tulips it is."), outputsText(c));
      const reqs = await requests();
      // JSON of the tool message: "\u003canswer\u003e\ntulips\n\u003c/answer\u003e"
      assert.match(reqs[reqs.length - 1].all, /answer.{1,14}tulips.{1,14}answer/, "the answer did not reach the model as the tool result");
    });

    await step("always allow from the panel: the same kind is not asked again", async () => {
      await enqueue([{ tool: { id: "a1", name: "execute_code", args: JSON.stringify({ code: "print('first run')" }) } }],
        [{ text: ["Ran once."] }]);
      const id = await execute("Run the first thing");
      await cellWaiting(id);
      for (const p of [narrow, wide]) await p.waitForSelector("#ask:not([hidden])[data-ask=command]", { timeout: TIMEOUT });
      await narrow.click("#alwaysAllow");
      for (const p of [narrow, wide]) await p.waitForSelector("#ask", { state: "hidden", timeout: TIMEOUT });
      const c0 = await cell(id);
      if (c0.waiting) await stdin(id, "n");
      const c = await cellDone(id);
      assert.equal(c.status, "ok", JSON.stringify(c));
      assert.ok(outputsText(c).includes("first run"), outputsText(c));

      await enqueue([{ tool: { id: "a2", name: "execute_code", args: JSON.stringify({ code: "print('second run')" }) } }],
        [{ text: ["Ran again without asking."] }]);
      const id2 = await execute("Run the second thing");
      const c2 = await cellDone(id2);
      assert.equal(c2.status, "ok", JSON.stringify(c2));
      assert.deepEqual(c2.prompts || [], [], "asked again on the notebook's stdin");
      assert.ok(outputsText(c2).includes("second run") && outputsText(c2).includes("Ran again without asking."), outputsText(c2));
      for (const p of [narrow, wide]) {
        await p.waitForSelector("text=Ran again without asking.", { timeout: TIMEOUT });
        assert.ok(await p.locator("#ask").isHidden(), "an ask is still shown");
      }
    });

    await step("a prompt from the panel while a notebook turn streams stops that turn cleanly", async () => {
      await enqueue([{ text: ["Working on the long answer"] }, { delayMs: 60000 }, { text: [" that never comes."] }],
        [{ text: ["Switched to the new request."] }]);
      const id = await execute("Write a long essay");
      for (const p of [narrow, wide]) await p.waitForSelector("text=Working on the long answer", { timeout: TIMEOUT });
      await wide.fill("#prompt", "Stop that, just say hi");
      await wide.press("#prompt", "Enter");
      const c = await cellDone(id);
      assert.equal(c.status, "ok", JSON.stringify(c));
      const out = outputsText(c);
      assert.ok(out.includes("Working on the long answer") && out.includes("a newer prompt took over"), out);
      assert.ok(!out.includes("Switched to the new request.") && !out.includes("never comes"), out);
      for (const p of [narrow, wide]) await p.waitForSelector("text=Switched to the new request.", { timeout: TIMEOUT });
      const old = (await timeline(wide)).find(([, kind, , text]) => kind === "say:text" && text.includes("Working on the long answer"));
      assert.ok(old && old[2], "the cut message is kept, marked partial: " + JSON.stringify(old));
      await shot(wide, "11-superseded-wide");
    });

    await step("images pasted and picked in the panel go to the model with the prompt", async () => {
      await enqueue([{ text: ["I see noise and a dot."] }]);
      // A picked screenshot too large to send as it is (noise: PNG cannot
      // shrink it) is scaled down by the panel; a pasted pixel goes as it is.
      const big = await wide.evaluate(() => {
        const c = document.createElement("canvas");
        c.width = 2400; c.height = 1500;
        const g = c.getContext("2d");
        const d = g.createImageData(c.width, c.height);
        for (let i = 0; i < d.data.length; i++) d.data[i] = (i % 4 === 3) ? 255 : Math.floor(Math.random() * 256);
        g.putImageData(d, 0, 0);
        return c.toDataURL("image/png").split(",")[1];
      });
      assert.ok(big.length * 3 / 4 > (1 << 20), "the picked image starts over the limit");
      await wide.setInputFiles("#attachFile", { name: "screen.png", mimeType: "image/png", buffer: Buffer.from(big, "base64") });
      await wide.evaluate(() => {
        const b64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
        const bytes = Uint8Array.from(atob(b64), (ch) => ch.charCodeAt(0));
        const dt = new DataTransfer();
        dt.items.add(new File([bytes], "pixel.png", { type: "image/png" }));
        document.getElementById("prompt").dispatchEvent(new ClipboardEvent("paste", { clipboardData: dt, bubbles: true, cancelable: true }));
      });
      await until("two images in the tray", async () => (await tray(wide)).length === 2);
      await wide.waitForSelector("#attachments .attachment >> nth=1", { timeout: TIMEOUT });
      // Something that is not an image is refused with a message.
      await wide.setInputFiles("#attachFile", { name: "notes.txt", mimeType: "text/plain", buffer: Buffer.from("hi") });
      await wide.waitForSelector("#banner:not([hidden]) >> text=Only PNG, JPEG, GIF and WebP", { timeout: TIMEOUT });
      assert.equal((await tray(wide)).length, 2);
      await shot(wide, "12-attachments-wide");
      const sent = await tray(wide);
      await wide.fill("#prompt", "What is in these images?");
      await wide.press("#prompt", "Enter");
      for (const p of [narrow, wide]) {
        await p.waitForSelector("text=I see noise and a dot.", { timeout: TIMEOUT });
        await p.locator("article.msg.user", { hasText: "What is in these images?" }).locator("img.image").nth(1)
          .waitFor({ timeout: TIMEOUT });
      }
      assert.equal((await tray(wide)).length, 0, "the tray empties on send");
      // Both images are shown in the conversation; the big one was scaled
      // to a long edge of at most 1568 px and 1 MiB.
      const dims = await narrow.evaluate(async () => {
        const imgs = [...document.querySelectorAll("article.msg.user img.image")].slice(-2);
        await Promise.all(imgs.map((i) => i.decode()));
        return imgs.map((i) => [i.naturalWidth, i.naturalHeight, i.alt]);
      });
      assert.deepEqual(dims[1], [1, 1, "attached image"]);
      assert.ok(dims[0][0] <= 1568 && dims[0][0] >= 100 && dims[0][2] === "attached image", JSON.stringify(dims));
      assert.ok((sent[0].length - sent[0].indexOf(",") - 1) * 3 / 4 <= (1 << 20), "the scaled image is within 1 MiB");
      await shot(narrow, "12-attached-images-narrow");
      // The model got both as image content of the user's message.
      const reqs = await requests();
      const last = reqs[reqs.length - 1].messages.map((m) => JSON.parse(m));
      const user = last.filter((m) => m.role === "user").pop();
      assert.ok(Array.isArray(user.content), JSON.stringify(user).slice(0, 400));
      const urls = user.content.filter((c) => c.type === "image_url").map((c) => c.image_url.url);
      assert.deepEqual(urls, sent, "the model gets exactly the attached images");
      assert.ok(user.content.some((c) => c.type === "text" && c.text.includes("What is in these images?")));
    });
  } finally {
    await browser.close();
    rmSync(profile, { recursive: true, force: true });
    try { await call("POST", "/quit"); } catch (e) { /* already gone */ }
    await new Promise((r) => { if (H.child.exitCode !== null) r(); else H.child.once("exit", r); });
  }
}

main().then(() => {
  log(`${results.filter((r) => r.ok).length}/${results.length} passed`);
  process.exit(0);
}, (e) => {
  console.error(e);
  log(`${results.filter((r) => r.ok).length}/${results.length} passed before a failure`);
  if (H && H.child && H.child.exitCode === null) H.child.kill("SIGTERM");
  process.exit(1);
});
