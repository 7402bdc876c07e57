// The README's screenshot of the Jupyter AI persona (docs/images/persona.png):
// JupyterLab 4 with Jupyter AI 3.2's chat (JUPYTERAI_PYTHON's venv, made by
// scripts/modern-venv.sh jupyterai) and this checkout's wheel (WHEEL)
// pip-installed beside it, in a venv over that one, as
// tests/python/test_jupyter_ai.py installs it; "Agent Kernel" picked in a
// chat's persona picker, a question, and the answer of `agentkernel acp`
// (which Jupyter AI's ACP client starts) streamed from the scripted model.
// `make screenshots` runs it after screenshots.mjs; nothing is asserted
// beyond what the picture needs to show.
//
// Environment: JUPYTERAI_PYTHON, WHEEL, SCRIPTED_BIN; OUT, the images'
// directory (default docs/images).
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { Steps, TIMEOUT, freePort, jupyterEnv, runTest, setting, startJupyter, startModel, until } from "./jupyterkit.mjs";
import { save as saveShot, withPage } from "./shots.mjs";

const steps = new Steps("persona");
const step = (name, fn) => steps.step(name, fn);
const PERSONA = "Agent Kernel";

/** Runs python with args and returns its stdout, trimmed. */
const py = (python, ...args) => execFileSync(python, args, { encoding: "utf8" }).trim();
const purelib = (python) => py(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))");

/**
 * A venv over base's (its site-packages on the path) with the wheel
 * pip-installed into it, the cached base venv left as it was: its python.
 */
function overlay(base, wheel, venv) {
  execFileSync(base, ["-m", "venv", "--without-pip", venv], { stdio: "inherit" });
  const python = join(venv, "bin", "python");
  writeFileSync(join(purelib(python), "base.pth"), purelib(base) + "\n");
  execFileSync(python, ["-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-index", "--no-deps", wheel],
    { stdio: "inherit" });
  return python;
}

async function run(tmp) {
  for (const d of ["work", "home", "config", "runtime", "data", "agent-data"]) mkdirSync(join(tmp, d), { recursive: true });
  setting(tmp, "@jupyterlab/apputils-extension:notification", { fetchNews: "false", checkForUpdates: false });
  const base = process.env.JUPYTERAI_PYTHON;
  const prefix = dirname(dirname(base));
  const python = overlay(base, process.env.WHEEL, join(tmp, "venv"));
  const model = await startModel();
  const env = {
    ...jupyterEnv(tmp, model),
    OPENAI_API_KEY: "sk-demo-0000-not-a-real-key-7f3a",
    JUPYTER_CONFIG_PATH: join(prefix, "etc", "jupyter"), // Jupyter AI's server extensions, enabled
    JUPYTER_PATH: join(prefix, "share", "jupyter"), // and its labextensions
  };
  for (const name of ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "XDG_CONFIG_HOME"]) delete env[name];
  writeFileSync(join(tmp, "work", "sales-questions.chat"), "{}");

  const lab = await startJupyter({ python, app: "jupyterlab", tmp, env,
    args: [`--MCPExtensionApp.mcp_port=${await freePort()}`] }); // Jupyter AI's MCP server, 3001 by default
  await withPage(tmp, steps, async (page) => {
    await step("sales-questions.chat opens, Jupyter AI's persona picker lists Agent Kernel", async () => {
      await page.goto(`${lab.base}/lab/tree/sales-questions.chat?token=${lab.token}`);
      const picker = page.locator(".jp-jai-personaControls-persona-btn");
      await picker.waitFor({ timeout: TIMEOUT });
      await picker.click();
      await page.getByRole("menuitem", { name: PERSONA }).click();
      await picker.filter({ hasText: PERSONA }).waitFor({ timeout: TIMEOUT });
    });

    await step("a question; agentkernel runs code (allowed in the chat) and streams its answer", async () => {
      const code = "import math; print(round(math.pi * 2.5 ** 2, 2))";
      await model.enqueue(
        { steps: [{ text: ["I'll compute it in Python."] },
          { toolCall: { id: "c1", name: "execute_code", args: [JSON.stringify({ code })] } },
          { usage: { input: 1700, output: 40 } }] },
        { steps: [{ text: ["A circle of radius 2.5 has an area of ", "**19.63** (π × 2.5²), ",
          "computed in the chat's kernel."] }, { usage: { input: 1850, output: 30 } }] });
      const input = page.locator(".jp-chat-input-container textarea:not([aria-hidden])").first();
      await input.click();
      await input.fill("What is the area of a circle of radius 2.5?");
      await page.keyboard.press("Enter");
      const allow = page.getByRole("button", { name: /^Allow/ }).first();
      await allow.waitFor({ timeout: TIMEOUT });
      await allow.click();
      await page.locator(".jp-chat-rendered-message").filter({ hasText: "computed in the chat's kernel" })
        .waitFor({ timeout: TIMEOUT });
      await until("the model's turns to be served", async () => (await model.pending()) === 0);
      // The tool call opened: its code's output.
      const callRow = page.locator("details.jp-jupyter-ai-acp-client-tool-call").first();
      await callRow.locator("summary").click();
      await callRow.locator(".jp-jupyter-ai-acp-client-tool-call-detail").filter({ hasText: "19.63" }).waitFor({ timeout: TIMEOUT });
      await saveShot(steps, page, "persona");
    });
  });
}

runTest(steps, "ak-persona-", run);
