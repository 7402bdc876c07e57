"""Prompt mode end to end through real Jupyter clients (nbconvert, nbclient,
jupyter_client), a real ipykernel, and the scripted model server speaking the
real OpenAI and Anthropic streaming formats (scripts/scriptedmodel).

What the model is sent is asserted on what the scripted server received.
Every test runs twice (the ``backing`` fixture): with the backing kernel as
agentkernel's child, and on a Jupyter server (the gateway backing).
"""

import base64
import json
import os
import re
import subprocess
import time
from pathlib import Path

import nbformat
import pytest
from jupyter_client import KernelManager

from conftest import WHERE


PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")
AGENT_CODE = ("from IPython.display import Image, display\n"
              "print('from the agent')\n"
              f"display(Image(data=__import__('base64').b64decode('{PNG}')))")
MODELS = {"openai": "openai:gpt-4.1", "anthropic": "anthropic:claude-sonnet-4-5"}


def text(*pieces):
    return {"steps": [{"text": list(pieces)}, {"usage": {"input": 20, "output": 5}}]}


def tool(call_id, name, args, say=None):
    raw = json.dumps(args)
    steps = [{"text": [say]}] if say else []
    steps.append({"toolCall": {"id": call_id, "name": name, "args": [raw[: len(raw) // 2], raw[len(raw) // 2:]]}})
    return {"steps": steps}


def install_local(env, name, model, approve, mode="prompt"):
    """install with local backing, for suites that do not run over a gateway."""
    subprocess.run([str(env["binary"]), "install", "--prefix", str(env["prefix"]), "--name", name, "--mode", mode,
                    "--model", model, "--approve", approve, "--probe=false"], check=True, capture_output=True)
    return name


def install(env, backing, name, model, approve, mode="prompt"):
    name = backing.spec(name)
    cmd = [str(env["binary"]), "install", "--prefix", str(env["prefix"]), "--name", name, "--mode", mode,
           "--model", model, "--approve", approve, "--probe=false", *backing.install_args()]
    subprocess.run(cmd, check=True, capture_output=True)
    return name


def nbconvert(nb_path, kernel, out_dir):
    proc = subprocess.run(["/usr/bin/jupyter", "nbconvert", "--to", "notebook", "--execute",
                           f"--ExecutePreprocessor.kernel_name={kernel}", "--ExecutePreprocessor.timeout=120",
                           "--output-dir", str(out_dir), str(nb_path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = nbformat.read(str(Path(out_dir) / Path(nb_path).name), as_version=4)
    nbformat.validate(out)
    return out


def outputs_of(cell):
    kinds, texts, pngs = [], [], 0
    for o in cell["outputs"]:
        kinds.append(o["output_type"])
        if o["output_type"] == "stream":
            texts.append(o["text"])
        elif "data" in o:
            texts.append(o["data"].get("text/markdown", o["data"].get("text/plain", "")))
            pngs += "image/png" in o["data"]
        elif o["output_type"] == "error":
            texts.append(o["ename"] + ": " + o["evalue"])
    return kinds, "\n".join(texts), pngs


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_nbconvert_prompt_cells(agentkernel_env, backing, model, tmp_path, api):
    """A prompt streams text; the agent's code prints and shows a PNG in the
    notebook; the turn ends with completion; with stdin disabled the headless
    policy approves and the decision is recorded."""
    kernel = install(agentkernel_env, backing, f"agent-e2e-{api}", MODELS[api], "all")
    nb = nbformat.v4.new_notebook()
    export = tmp_path / f"session-{api}.jsonl"
    nb.cells = [nbformat.v4.new_code_cell("Say hello, then show me something."),
                nbformat.v4.new_code_cell(f"%agent export {export}")]
    path = tmp_path / "prompt.ipynb"
    nbformat.write(nb, str(path))
    model.enqueue(text("Hello", " from ", api, "!"))
    n0 = len(model.requests())
    # nbconvert runs both cells as one session: the first prompt is one turn.
    model.enqueue(tool("c1", "execute_code", {"code": AGENT_CODE}, say="Running code."),
                  tool("c2", "attempt_completion", {"result": "Printed and plotted."}))
    nb.cells.insert(1, nbformat.v4.new_code_cell("Now print and plot."))
    nbformat.write(nb, str(path))
    out = nbconvert(path, kernel, tmp_path / "out")

    kinds, body, _ = outputs_of(out.cells[0])
    assert f"Hello from {api}!" in body, (kinds, body)
    kinds, body, pngs = outputs_of(out.cells[1])
    assert "from the agent" in body and pngs == 1, (kinds, body)
    assert "**Result:** Printed and plotted." in body, body
    assert out.cells[1]["execution_count"] == 2
    lines = [json.loads(l) for l in export.read_text().splitlines()]
    decisions = [json.dumps(l) for l in lines if "Allowed execute_code" in json.dumps(l)]
    assert decisions and "policy:all" in decisions[0], decisions
    reqs = model.requests()[n0:]
    assert len(reqs) == 3
    assert reqs[0]["path"] == ("/v1/chat/completions" if api == "openai" else "/v1/messages")
    assert "from the agent" in json.dumps(reqs[2]["body"]), "the tool result did not reach the model"


class Client:
    """A jupyter_client kernel on a spec, with helpers for prompt cells."""

    def __init__(self, name):
        self.km = KernelManager(kernel_name=name)
        self.km.start_kernel()
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)

    def cell(self, code, stdin=None, timeout=60):
        outputs = []
        def hook(m):
            outputs.append(m)
        kw = {"allow_stdin": stdin is not None}
        if stdin is not None:
            kw["stdin_hook"] = lambda m: self.kc.input(stdin(m["content"]["prompt"]))
        reply = self.kc.execute_interactive(code, output_hook=hook, timeout=timeout, **kw)
        return reply["content"], outputs

    def close(self):
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=False)


def text_of(outputs):
    parts = []
    for m in outputs:
        c = m["content"]
        if m["msg_type"] == "stream":
            parts.append(c["text"])
        elif m["msg_type"] in ("display_data", "update_display_data", "execute_result"):
            parts.append(c["data"].get("text/plain", ""))
        elif m["msg_type"] == "error":
            parts.append(c["ename"] + ": " + c["evalue"])
    return "\n".join(parts)


def where(outputs):
    """The pid and connection file that WHERE printed, as one line."""
    found = re.search(r"^\d+ \S+\.json$", text_of(outputs), re.M)
    assert found, text_of(outputs)
    return found.group(0)


def test_stdin_approval_headless_denial_and_rewind(agentkernel_env, backing, model):
    name = install(agentkernel_env, backing, "agent-e2e-none", MODELS["openai"], "none")
    k = Client(name)
    try:
        # With stdin the notebook user approves the agent's code, which runs
        # in the backing kernel (on the server, with gateway backing), as do
        # %%code cells.
        prompts = []
        model.enqueue(tool("c1", "execute_code", {"code": "print('approved run')\n" + WHERE}), text("Ran it."))
        reply, out = k.cell("Run a print.", stdin=lambda p: (prompts.append(p), "y")[1])
        assert reply["status"] == "ok", reply
        assert prompts and "print('approved run')" in prompts[0], prompts
        assert "approved run" in text_of(out)
        agent_pid = k.km.provisioner.pid
        runs_in = backing.check_where_code_runs(agent_pid, where(out))
        reply, out = k.cell("%%code\n" + WHERE)
        assert reply["status"] == "ok", reply
        assert backing.check_where_code_runs(agent_pid, where(out)) == runs_in

        # Without stdin the policy (none) denies, and says so in the history.
        model.enqueue(tool("c2", "execute_code", {"code": "print('should not run')"}), text("Denied, fine."))
        reply, out = k.cell("Try again without asking me.")
        assert reply["status"] == "ok"
        ran = [m for m in out if m["msg_type"] == "stream" and m["content"]["name"] == "stdout"
               and "should not run" in m["content"]["text"]]
        assert not ran, "denied code ran"
        _, out = k.cell("%agent history")
        history = text_of(out)
        assert "Denied execute_code" in history, history
        export = Path(os.environ["AGENTKERNEL_DATA_DIR"]) / "denied.jsonl"
        k.cell(f"%agent export {export}")
        denied = [l for l in export.read_text().splitlines() if "Denied execute_code" in l]
        assert denied and "policy:none" in denied[0], denied

        # %agent rewind removes from both histories: the next request lacks them.
        line = [l for l in history.splitlines() if "Try again without asking me." in l][0]
        reply, out = k.cell("%agent rewind " + line.split()[0])
        assert reply["status"] == "ok" and "Rewound" in text_of(out), text_of(out)
        model.enqueue(text("After the rewind."))
        k.cell("What is left?")
        last = json.dumps(model.requests()[-1]["body"])
        assert "Try again without asking me." not in last and "should not run" not in last, last
        assert "Run a print." in last and "approved run" in last
    finally:
        k.close()


def test_interrupt_retry_and_resume(agentkernel_env, backing, model):
    name = install(agentkernel_env, backing, "agent-e2e-anthropic2", MODELS["anthropic"], "none")
    k = Client(name)
    try:
        # An interrupt during a slow stream ends the cell promptly.
        model.enqueue({"steps": [{"text": ["Thinking hard"]}, {"stall": True}]})
        msg_id = k.kc.execute("Take your time.")
        deadline = time.time() + 20
        while model.pending() > 0 and time.time() < deadline:
            time.sleep(0.02)
        time.sleep(0.2)
        t0 = time.monotonic()
        k.km.interrupt_kernel()
        while True:
            reply = k.kc.get_shell_msg(timeout=10)
            if reply["parent_header"].get("msg_id") == msg_id:
                break
        elapsed = time.monotonic() - t0
        print(f"interrupt → execute_reply in {elapsed * 1000:.0f} ms")
        assert reply["content"]["status"] == "error" and reply["content"]["ename"] == "KeyboardInterrupt"
        assert elapsed < 5, elapsed

        # A 429 is retried and then reported.
        model.enqueue(*[{"status": 429, "retryAfter": "0"}] * 4)
        reply, out = k.cell("This will fail.", timeout=60)
        assert reply["status"] == "error" and reply["ename"] == "ModelAPIError", reply
        assert text_of(out).count("Retrying") == 3, text_of(out)

        # The interrupted turn left a valid history: the next request is accepted.
        model.enqueue(text("Back again."))
        reply, out = k.cell("")  # an empty prompt retries the failed request
        assert reply["status"] == "ok" and "Back again." in text_of(out)
        body = model.requests()[-1]["body"]
        assert body["messages"][-2]["role"] == "assistant", body["messages"]

        _, out = k.cell("%agent history")
        session_line = text_of(out)
        _, out = k.cell("%agent sessions")
        sid = text_of(out).splitlines()[1].split()[0]

        # %agent resume in a restarted kernel continues the session.
        k.km.restart_kernel()
        k.kc.wait_for_ready(timeout=60)
        reply, out = k.cell(f"%agent resume {sid}")
        assert reply["status"] == "ok" and "Resumed" in text_of(out), text_of(out)
        model.enqueue(text("Still here."))
        k.cell("Do you remember?")
        last = json.dumps(model.requests()[-1]["body"])
        assert "Take your time." in last and "Back again." in last, last
        assert session_line
    finally:
        k.close()


def test_recorded_run_replays_to_identical_outputs(agentkernel_env, backing, model, tmp_path):
    cassette = tmp_path / "run.cassette"
    rec = install(agentkernel_env, backing, "agent-e2e-rec", MODELS["openai"], "all")
    spec_path = Path(agentkernel_env["prefix"]) / "share/jupyter/kernels" / rec / "kernel.json"
    spec = json.loads(spec_path.read_text())
    spec["env"]["AGENTKERNEL_RECORD"] = str(cassette)
    spec_path.write_text(json.dumps(spec))
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("Compute 6*7 for me.")]
    path = tmp_path / "rec.ipynb"
    nbformat.write(nb, str(path))
    model.enqueue(tool("c1", "execute_code", {"code": "print(6 * 7)"}, say="Computing."),
                  tool("c2", "attempt_completion", {"result": "It is 42."}))
    first = nbconvert(path, rec, tmp_path / "first")
    assert "42" in outputs_of(first.cells[0])[1]
    assert cassette.exists() and "sk-test-not-real" not in cassette.read_text()

    n = len(model.requests())
    play = install(agentkernel_env, backing, "agent-e2e-play", f"replay:{cassette}", "all")
    second = nbconvert(path, play, tmp_path / "second")
    assert len(model.requests()) == n, "the replay called the model"
    assert outputs_of(second.cells[0]) == outputs_of(first.cells[0])
