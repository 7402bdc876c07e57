// Browser tests of agentkernel in JupyterLab 4 and Notebook 7 (the PyPI
// stack, LAB_PYTHON's), with the sidebar extension (labextension/, built
// into LAB_EXTENSION) and the scripted model. Debian's chromium, driven by
// playwright-core. Run through run.sh; screenshots go to tests/artifacts/.
//
// Environment: LAB_PYTHON (a python with jupyterlab and notebook 7),
// AGENTKERNEL_BIN, SCRIPTED_BIN (scripts/scriptedmodel built), LAB_EXTENSION
// (the built labextension directory).
import { spawnSync, execFileSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import assert from "node:assert/strict";
import { chromium } from "playwright-core";
import {
  CHROMIUM_ARGS, Steps, TIMEOUT, agentTab, attached, collapse, jupyterEnv as kitEnv, runCell, sidebar, startJupyter as kitJupyter,
  runTest, settingsEntry, startModel, themeMenu, until, writeNotebook as notebook,
} from "./jupyterkit.mjs";

const steps = new Steps("lab");
const log = (...a) => steps.log(...a);
const step = (name, fn) => steps.step(name, fn);
const shot = (page, name) => steps.shot(page, name);

let model; // the scripted model
const enqueue = (...turns) => model.enqueue(...turns);
const pending = () => model.pending();
const jupyterEnv = (tmp) => kitEnv(tmp, model);
const startJupyter = (app, tmp, baseURL = "/") => kitJupyter({ python: process.env.LAB_PYTHON, app, tmp, env: jupyterEnv(tmp), baseURL });

// approveAndPlot: a prompt whose code the sidebar approves; its plot and
// the answer appear in the cell, and no stdin prompt is left.
async function approveAndPlot(page, name) {
  const code = "import matplotlib\\nmatplotlib.use('module://matplotlib_inline.backend_inline')\\nimport matplotlib.pyplot as plt\\nplt.plot([1, 3, 2])\\nplt.show()";
  await enqueue(
    { steps: [{ toolCall: { id: "c1", name: "execute_code", args: [`{"code": "${code}"}`] } }] },
    { steps: [{ text: ["Plotted."] }] });
  await runCell(page, "Plot something");
  // With the sidebar open the ask is answered there; the cell says so (no
  // stdin prompt, which would outlive the answer).
  await page.locator(".jp-OutputArea-output").filter({ hasText: "Answer it in the Agent sidebar." }).first()
    .waitFor({ timeout: TIMEOUT });
  const approve = sidebar(page).locator("#approve");
  await approve.waitFor({ state: "visible", timeout: TIMEOUT });
  await approve.click();
  await page.locator(".jp-OutputArea-output img").first().waitFor({ timeout: TIMEOUT });
  await page.locator(".jp-OutputArea-output").filter({ hasText: "Plotted." }).first().waitFor({ timeout: TIMEOUT });
  assert.equal(await page.locator(".jp-Stdin-input").count(), 0, "a stdin prompt was left in the notebook");
  assert.equal(await pending(), 0);
  await shot(page, name);
}

// rewindFromSidebar: "rewind to here" on the plot's prompt, conversation
// and files only; %agent history in the notebook agrees.
async function rewindFromSidebar(page, kept, name) {
  const sb = sidebar(page);
  const prompt = sb.locator("article.msg.user").filter({ hasText: "Plot something" });
  await prompt.hover();
  await prompt.locator("button.rewind").click();
  await sb.locator("#rwKernel").uncheck();
  await sb.locator("#rwDo").click();
  await sb.locator("#rwSummary").waitFor({ state: "visible", timeout: TIMEOUT });
  await until("the sidebar to drop the rewound prompt", async () => (await sb.locator("article.msg.user").filter({ hasText: "Plot something" }).count()) === 0);
  await runCell(page, "%agent history");
  const out = page.locator(".jp-OutputArea-output").filter({ hasText: "say:text" }).last();
  await out.waitFor({ timeout: TIMEOUT });
  const text = await out.innerText();
  assert.ok(text.includes(kept) && !text.includes("Plot something"), text);
  await shot(page, name);
}

// ---- the theme and the header ----

// themes: what JupyterLab's theme resolves to (a probe styled with its
// variables), and what the sidebar's page shows.
async function themes(page) {
  const lab = await page.evaluate(() => {
    const probe = document.createElement("div");
    probe.style.cssText = "position:absolute;visibility:hidden;background:var(--jp-layout-color1);" +
      "color:var(--jp-ui-font-color1);font-family:var(--jp-ui-font-family);font-size:var(--jp-ui-font-size1)";
    document.body.appendChild(probe);
    const cs = getComputedStyle(probe);
    const r = { name: document.body.dataset.jpThemeName, bg: cs.backgroundColor, fg: cs.color, font: cs.fontFamily, size: cs.fontSize };
    probe.remove();
    return r;
  });
  const panel = await sidebar(page).locator("body").evaluate(() => {
    const cs = getComputedStyle(document.body);
    return { bg: cs.backgroundColor, fg: cs.color, font: cs.fontFamily, size: cs.fontSize,
      scheme: getComputedStyle(document.documentElement).colorScheme };
  });
  return { lab, panel };
}

// lightness of a computed "rgb(r, g, b)" colour, 0..255.
function lightness(rgb) {
  const [r, g, b] = rgb.match(/[\d.]+/g).map(Number);
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

// assertTheme: the sidebar's page wears the lab's theme (colours, font).
async function assertTheme(page, name, light) {
  const t = await until("the sidebar to wear " + name, async () => {
    const t = await themes(page);
    return t.lab.name === name && t.panel.bg === t.lab.bg ? t : null;
  });
  assert.equal(t.panel.fg, t.lab.fg, "text colour: " + JSON.stringify(t));
  assert.equal(t.panel.font, t.lab.font, "font: " + JSON.stringify(t));
  assert.equal(t.panel.size, t.lab.size, "font size: " + JSON.stringify(t));
  assert.equal(t.panel.scheme, light ? "light" : "dark", "color-scheme: " + JSON.stringify(t));
  assert.ok(light ? lightness(t.panel.bg) > 200 : lightness(t.panel.bg) < 80, "background " + t.panel.bg + " for " + name);
  return t;
}

// headerFits: every part of the sidebar's header, the token and cost line
// above all, lies inside the sidebar: nothing cut, nothing to scroll to.
async function assertHeaderFits(page, totals = /\d+ in · \d+ out · \$\d+\.\d{4}/) {
  await until("the header's totals", async () => totals.test(await sidebar(page).locator("#totals").textContent()));
  const h = await sidebar(page).locator("body").evaluate(() => {
    const bar = document.getElementById("bar"), totals = document.getElementById("totals");
    const parts = [...bar.children].filter((n) => !n.hidden).map((n) => {
      const r = n.getBoundingClientRect();
      return { id: n.id || n.className, left: r.left, right: r.right, scroll: n.scrollWidth, client: n.clientWidth };
    });
    return { width: window.innerWidth, docScroll: document.documentElement.scrollWidth, barScroll: bar.scrollWidth,
      barClient: bar.clientWidth, text: totals.textContent, parts };
  });
  log("sidebar width", h.width, "px; header:", h.text);
  assert.ok(h.docScroll <= h.width && h.barScroll <= h.barClient, "the header overflows: " + JSON.stringify(h));
  for (const p of h.parts) {
    assert.ok(p.left >= 0 && p.right <= h.width + 0.5, p.id + " is cut: " + JSON.stringify(h));
    if (p.id === "totals") assert.ok(p.scroll <= p.client, "the totals are cut: " + JSON.stringify(h));
  }
}

// ---- the shell's conventions: icon, command, shortcut, setting, layout ----

// setAutoOpen sets the sidebar's "Open by itself" in the Settings Editor
// (Settings > Settings Editor, the plugin found by its name) and waits
// until the server holds it.
async function setAutoOpen(page, lab, on) {
  const entry = await settingsEntry(page, "Agent Sidebar");
  // The schema's setting-icon: the plugin wears its icon there too.
  assert.equal(await entry.locator('svg[data-icon="agentkernel:agent"]').count(), 1, "the Settings Editor shows no Agent icon");
  await entry.click();
  const box = page.locator(".jp-SettingsForm", { hasText: "Open by itself" }).locator('input[type="checkbox"]');
  await box.waitFor({ timeout: TIMEOUT });
  if (on) await box.check(); else await box.uncheck();
  await until("the server to hold autoOpen " + on, async () => {
    const r = await fetch(`${lab.base}/lab/api/settings/@agentkernel/jupyterlab:plugin?token=${lab.token}`);
    const j = await r.json();
    return (j.settings && j.settings.autoOpen !== undefined ? j.settings.autoOpen : true) === on;
  });
}

async function run(tmp) {
  for (const d of ["work", "home", "config", "runtime", "data", "agent-data"]) mkdirSync(join(tmp, d), { recursive: true });
  // No "get Jupyter news?" toast: it would lie over the sidebar's Send button.
  const apputils = join(tmp, "config", "lab", "user-settings", "@jupyterlab", "apputils-extension");
  mkdirSync(apputils, { recursive: true });
  writeFileSync(join(apputils, "notification.jupyterlab-settings"), JSON.stringify({ fetchNews: "false" }));
  model = await startModel();
  const bin = process.env.AGENTKERNEL_BIN;
  const prefix = join(tmp, "prefix");
  execFileSync(bin, ["install", "--prefix", prefix, "--probe=false"], { env: jupyterEnv(tmp), stdio: "inherit" });
  cpSync(process.env.LAB_EXTENSION, join(prefix, "share", "jupyter", "labextensions", "@agentkernel", "jupyterlab"), { recursive: true });
  notebook(join(tmp, "work", "agent.ipynb"), "agent", "Agent");
  notebook(join(tmp, "work", "nb7.ipynb"), "agent", "Agent");
  notebook(join(tmp, "work", "second.ipynb"), "agent", "Agent");

  // JupyterLab behind a base URL, as a JupyterHub single-user server is.
  const lab = await startJupyter("jupyterlab", tmp, "/user/tester/");
  const profile = mkdtempSync(join(tmp, "chromium-"));
  // The OS asks for dark pages: the sidebar must follow JupyterLab's
  // theme (Light by default) all the same.
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium", headless: true, args: CHROMIUM_ARGS,
    viewport: { width: 1400, height: 900 }, colorScheme: "dark",
  });
  try {
    const page = await browser.newPage();
    steps.page = page;
    page.on("pageerror", (e) => log("page error:", e.message));
    page.on("dialog", (d) => d.accept());
    const consoleLines = []; // of the page and the sidebar's frame
    page.on("console", (m) => consoleLines.push(m.text()));

    await step("JupyterLab 4 lists the extension and its launcher shows Agent and Agent (code)", async () => {
      const list = spawnSync(process.env.LAB_PYTHON, ["-m", "jupyter", "labextension", "list"], { env: jupyterEnv(tmp) });
      const ext = list.stdout.toString() + list.stderr.toString();
      assert.match(ext, /@agentkernel\/jupyterlab.*enabled.*OK/, ext);
      // The shipped bundle carries no test hook: the tests reach the panel
      // through its DOM.
      const staticDir = join(process.env.LAB_EXTENSION, "static");
      const js = readdirSync(staticDir).filter((f) => f.endsWith(".js"));
      assert.ok(js.length > 0, "no JavaScript in " + staticDir);
      for (const f of js) {
        const text = readFileSync(join(staticDir, f), "utf8");
        assert.ok(!/__akPanel|AKMarkdown/.test(text), f + " holds a test hook");
      }
      await page.goto(`${lab.base}/lab?token=${lab.token}`);
      const cards = page.locator(".jp-LauncherCard-label");
      await cards.first().waitFor({ timeout: TIMEOUT });
      const labels = await cards.allInnerTexts();
      assert.ok(labels.includes("Agent") && labels.includes("Agent (code)"), JSON.stringify(labels));
      await shot(page, "01-launcher");
    });

    await step("a notebook on Agent opens the sidebar by itself, over the kernel's comm", async () => {
      await page.goto(`${lab.base}/lab/tree/agent.ipynb?token=${lab.token}`);
      await page.locator("#agentkernel-sidebar iframe").waitFor({ state: "visible", timeout: TIMEOUT });
      await sidebar(page).locator("#status").filter({ hasText: /idle/ }).waitFor({ timeout: TIMEOUT });
      await shot(page, "02-sidebar");
    });

    await step("a prompt cell streams into the notebook, and the sidebar mirrors the turn", async () => {
      await enqueue({ steps: [{ text: ["Hello ", "from ", "JupyterLab."] }, { usage: { input: 123456, output: 7890 } }] });
      await runCell(page, "Say hello");
      await page.locator(".jp-OutputArea-output").filter({ hasText: "Hello from JupyterLab." }).first().waitFor({ timeout: TIMEOUT });
      await sidebar(page).locator("#timeline").filter({ hasText: "Hello from JupyterLab." }).waitFor({ timeout: TIMEOUT });
      await sidebar(page).locator("#timeline").filter({ hasText: "Say hello" }).waitFor({ timeout: TIMEOUT });
      await shot(page, "03-mirrored");
    });

    await step("Send, clicked in the sidebar, sends the prompt (no form submission in the sandbox)", async () => {
      const sb = sidebar(page);
      await enqueue({ steps: [{ text: ["Answered from the sidebar."] }] });
      await sb.locator("#prompt").fill("Asked from the sidebar");
      await sb.locator("#send").click();
      await sb.locator("#timeline").filter({ hasText: "Answered from the sidebar." }).waitFor({ timeout: TIMEOUT });
      assert.equal(await sb.locator("#prompt").inputValue(), "", "the prompt stays in the box");
      assert.equal(await pending(), 0);
      // Enter sends too.
      await enqueue({ steps: [{ text: ["Answered after Enter."] }] });
      await sb.locator("#prompt").fill("Asked with Enter");
      await sb.locator("#prompt").press("Enter");
      await sb.locator("#timeline").filter({ hasText: "Answered after Enter." }).waitFor({ timeout: TIMEOUT });
      assert.deepEqual(consoleLines.filter((l) => /form submission/i.test(l)), []);
      await shot(page, "03b-sent-by-click");
    });

    await step("Sessions search in the sidebar, by clicking Search and by Enter", async () => {
      const sb = sidebar(page);
      await sb.locator("#sessionsBtn").click();
      await sb.locator("#sessionList li.current").waitFor({ timeout: TIMEOUT });
      await sb.locator("#sessionQuery").fill("sidebar");
      await sb.locator("#sessions button", { hasText: /^Search$/ }).click();
      await sb.locator("#searchHits li button", { hasText: /^Session / }).first().waitFor({ timeout: TIMEOUT });
      await shot(page, "03c-sessions-search");
      await sb.locator("#sessionQuery").fill("zebra");
      await sb.locator("#sessionQuery").press("Enter");
      await sb.locator("#searchHits li", { hasText: "No messages match." }).waitFor({ timeout: TIMEOUT });
      await sb.locator("#sessionList li", { hasText: "No sessions match." }).waitFor({ timeout: TIMEOUT });
      await sb.locator("#sessionQuery").fill("");
      await sb.locator("#sessionQuery").press("Enter"); // no query: every session again
      await sb.locator("#sessionList li.current").waitFor({ timeout: TIMEOUT });
      assert.deepEqual(consoleLines.filter((l) => /form submission/i.test(l)), []);
      await sb.locator("#sessionsBtn").click();
      await sb.locator("#sessions").waitFor({ state: "hidden", timeout: TIMEOUT });
    });

    await step("the header's token and cost line is whole at the default sidebar width", () =>
      assertHeaderFits(page, /^123456 in · 7890 out · \$\d+\.\d{4} · context /));

    await step("the sidebar wears JupyterLab Light, not the OS's dark mode", async () => {
      await assertTheme(page, "JupyterLab Light", true);
      await shot(page, "03d-light");
    });

    await step("a theme value that would load something (url(), image-set(), an escape) is not set in the page", async () => {
      // As if the page's parent sent it: the page checks every value.
      await page.evaluate(() => document.querySelector("#agentkernel-sidebar iframe").contentWindow.postMessage({ akTheme: { light: true, vars: {
        "--jp-layout-color1": "url(http://127.0.0.1:9/bg.png)", "--jp-layout-color2": "image-set(\"http://127.0.0.1:9/a.png\" 1x)",
        "--jp-border-color2": "\\75 rl(http://127.0.0.1:9/b.png)", "--jp-ui-font-color1": "rgb(1, 2, 3)", "color": "red" } } }, "*"));
      const root = sidebar(page).locator("html");
      await until("the page to take the theme", async () => (await root.getAttribute("style") || "").includes("rgb(1, 2, 3)"));
      const style = await root.getAttribute("style");
      assert.ok(!/url|image-set|\\|color: red/.test(style), style);
      assert.equal(await sidebar(page).locator("body").evaluate(() => getComputedStyle(document.body).backgroundColor), "rgb(255, 255, 255)");
    });

    await step("switched to JupyterLab Dark, the sidebar follows at once; and back to Light", async () => {
      const before = await themes(page);
      // A mark on a message of the sidebar's timeline: a new comm would
      // bring the state again, which draws every message anew.
      await sidebar(page).locator("#timeline article.msg").first().evaluate((n) => { n.dataset.probe = "kept"; });
      const kept = () => sidebar(page).locator('#timeline article.msg[data-probe="kept"]').count();
      await themeMenu(page, "JupyterLab Dark");
      const dark = await assertTheme(page, "JupyterLab Dark", false);
      assert.notEqual(dark.panel.bg, before.panel.bg);
      // JupyterLab hides its shell for a moment to redraw: the panel keeps
      // its comm (a new one would bring the state again, as frames).
      await page.waitForTimeout(500);
      assert.equal(await kept(), 1, "the theme change reopened the panel's comm");
      await assertHeaderFits(page, /^123456 in · 7890 out · \$\d+\.\d{4} · context /);
      await sidebar(page).locator("#sessionsBtn").click();
      await sidebar(page).locator("#sessionList li.current").waitFor({ timeout: TIMEOUT });
      await shot(page, "03e-dark");
      await sidebar(page).locator("#sessionsBtn").click();
      await themeMenu(page, "JupyterLab Light");
      const light = await assertTheme(page, "JupyterLab Light", true);
      assert.equal(light.panel.bg, before.panel.bg);
    });

    await step("a larger UI font in JupyterLab reaches the sidebar, whose header still fits", async () => {
      const before = await themes(page);
      await themeMenu(page, "Increase UI Font Size");
      await until("a larger font in the sidebar", async () => {
        const t = await themes(page);
        return t.lab.size !== before.lab.size && t.panel.size === t.lab.size;
      });
      await assertHeaderFits(page);
      await shot(page, "03f-larger-font");
      await themeMenu(page, "Decrease UI Font Size");
      await until("the font back in the sidebar", async () => (await themes(page)).panel.size === before.lab.size);
    });

    await step("an ask is approved from the sidebar; the code runs and its plot appears in the cell", () => approveAndPlot(page, "05-plot"));

    await step("off-host: the sidebar needs no port of the kernel's (no web panel server runs)", async () => {
      // The browser reached the kernel only through the Jupyter server: the
      // comm on the notebook's connection. No agentkernel web panel listens.
      const list = JSON.parse(execFileSync(bin, ["webview", "list", "--json"], { env: jupyterEnv(tmp) }).toString());
      assert.deepEqual(list, [], "a web panel server is running: " + JSON.stringify(list));
    });

    await step("with the sidebar closed, an approval is asked on stdin and answered there", async () => {
      await agentTab(page).click(); // collapse
      await page.locator("#agentkernel-sidebar").waitFor({ state: "hidden", timeout: TIMEOUT });
      await enqueue(
        { steps: [{ toolCall: { id: "c2", name: "execute_code", args: ['{"code": "print(6 * 7)"}'] } }] },
        { steps: [{ text: ["Printed it."] }] });
      await runCell(page, "Print six times seven");
      const input = page.locator(".jp-Stdin-input");
      await input.waitFor({ timeout: TIMEOUT });
      await shot(page, "05b-stdin");
      await input.fill("y");
      await input.press("Enter");
      await page.locator(".jp-OutputArea-output").filter({ hasText: "Printed it." }).first().waitFor({ timeout: TIMEOUT });
      await page.locator(".jp-OutputArea-output").filter({ hasText: /^\s*42\s*$/ }).first().waitFor({ timeout: TIMEOUT });
      await agentTab(page).click(); // open again
      await sidebar(page).locator("#timeline").filter({ hasText: "Printed it." }).waitFor({ timeout: TIMEOUT });
    });

    await step("a rewind from the sidebar shows in the notebook (%agent history)", () => rewindFromSidebar(page, "Say hello", "06-rewound"));

    await step("the sidebar's tab wears the Agent icon (a LabIcon, in the theme's colours), not a bare label", async () => {
      const tab = agentTab(page);
      const icon = tab.locator('svg[data-icon="agentkernel:agent"]');
      await icon.waitFor({ timeout: TIMEOUT });
      const look = await icon.evaluate((svg) => {
        const probe = document.createElement("div");
        probe.style.color = "var(--jp-inverse-layout-color3)"; // what .jp-icon3 fills with
        document.body.appendChild(probe);
        const want = getComputedStyle(probe).color;
        probe.remove();
        return { fill: getComputedStyle(svg.querySelector(".jp-icon3")).fill, want };
      });
      assert.equal(look.fill, look.want, "the icon does not take the theme's colour: " + JSON.stringify(look));
      assert.equal((await tab.locator(".lm-TabBar-tabLabel").textContent()).trim(), "", "the tab shows a label");
      assert.equal(await tab.getAttribute("title"), "Agent", "the tab's tooltip");
      await shot(page, "10-tab-icon");
    });

    await step("the palette's Open Agent Sidebar (category Agent) opens the sidebar, and so does its shortcut", async () => {
      await collapse(page);
      await page.keyboard.press("Control+Shift+C"); // the command palette
      const search = page.locator(".lm-CommandPalette-input");
      await search.waitFor({ timeout: TIMEOUT });
      await search.fill("Open Agent Sidebar");
      const item = page.locator('.lm-CommandPalette-item[data-command="agentkernel:open-sidebar"]');
      await item.waitFor({ timeout: TIMEOUT });
      assert.equal((await page.locator(".lm-CommandPalette-header").first().textContent()).trim().toLowerCase(), "agent");
      await shot(page, "11-palette");
      await item.click();
      await attached(page);
      await collapse(page);
      await page.keyboard.press("Control+Shift+Y");
      await attached(page);
    });

    await step("auto-open is a setting: off in the Settings Editor, an Agent notebook opened next leaves the sidebar closed", async () => {
      await setAutoOpen(page, lab, false);
      await shot(page, "12-setting-off");
      await collapse(page);
      // Opened from the file browser, as a person opens a notebook.
      await page.locator(".jp-DirListing-item", { hasText: "second.ipynb" }).dblclick();
      await until("second.ipynb's Agent kernel to be up", async () => {
        const r = await fetch(`${lab.base}/api/sessions?token=${lab.token}`);
        const ss = await r.json();
        return ss.some((x) => x.path.endsWith("second.ipynb") && x.kernel && x.kernel.execution_state === "idle");
      });
      await page.waitForTimeout(2000); // time it had to open, were it to
      assert.ok(await page.locator("#agentkernel-sidebar").isHidden(), "the sidebar opened by itself");
      await shot(page, "13-not-opened");
    });

    await step("the layout is restored after a reload: the sidebar opened by hand is open again (auto-open is off)", async () => {
      await page.keyboard.press("Control+Shift+Y");
      await attached(page);
      await page.waitForTimeout(1500); // JupyterLab saves the workspace's layout within 750 ms of a change
      // The layout restorer knows the sidebar by name, current in the right area.
      const ws = await (await fetch(`${lab.base}/lab/api/workspaces/default?token=${lab.token}`)).json();
      const right = ws.data["layout-restorer:data"].right;
      assert.ok(right.widgets.includes("agentkernel-sidebar") && right.current === "agentkernel-sidebar" && !right.collapsed,
        "the saved layout: " + JSON.stringify(right));
      await page.reload();
      await attached(page);
      await shot(page, "14-restored");
    });

    await step("auto-open on again in the Settings Editor", () => setAutoOpen(page, lab, true));
  } finally {
    await browser.close();
    rmSync(profile, { recursive: true, force: true });
  }

  // Notebook 7: the same extension, in its right sidebar.
  const nb = await startJupyter("notebook", tmp);
  const profile2 = mkdtempSync(join(tmp, "chromium-"));
  const browser2 = await chromium.launchPersistentContext(profile2, {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium", headless: true, args: CHROMIUM_ARGS,
    viewport: { width: 1400, height: 900 }, colorScheme: "dark",
  });
  try {
    const page = await browser2.newPage();
    steps.page = page;
    page.on("pageerror", (e) => log("page error:", e.message));
    await step("Notebook 7 opens the sidebar for an Agent notebook and mirrors a turn", async () => {
      await page.goto(`${nb.base}/notebooks/nb7.ipynb?token=${nb.token}`);
      await page.locator("#agentkernel-sidebar iframe").waitFor({ state: "visible", timeout: TIMEOUT });
      await sidebar(page).locator("#status").filter({ hasText: /idle/ }).waitFor({ timeout: TIMEOUT });
      await enqueue({ steps: [{ text: ["Hello from Notebook 7."] }] });
      await runCell(page, "Say hello again");
      await page.locator(".jp-OutputArea-output").filter({ hasText: "Hello from Notebook 7." }).first().waitFor({ timeout: TIMEOUT });
      await sidebar(page).locator("#timeline").filter({ hasText: "Hello from Notebook 7." }).waitFor({ timeout: TIMEOUT });
      await assertTheme(page, "JupyterLab Light", true);
      await assertHeaderFits(page);
      await shot(page, "07-notebook7");
    });
    await step("Notebook 7: an ask approved from the sidebar, its plot in the cell", () => approveAndPlot(page, "08-notebook7-plot"));
    await step("Notebook 7: a rewind from the sidebar shows in the notebook", () => rewindFromSidebar(page, "Say hello again", "09-notebook7-rewound"));
  } finally {
    await browser2.close();
    rmSync(profile2, { recursive: true, force: true });
  }
}

runTest(steps, "ak-lab-", run);
