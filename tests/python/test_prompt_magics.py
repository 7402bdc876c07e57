"""Prompt mode's partial rows, through jupyter_client on a real kernel (prompt
mode, a real ipykernel behind it) and the scripted model server: streaming
as update_display_data (rate and final text), %agent edit, followup
questions answered on stdin, %agent new / model / cost / help, the session
title, and %agent export to a notebook.

One kernel serves the module; each test starts its own session with
%agent new.
"""

import json
import subprocess
from pathlib import Path

import nbformat
import pytest
from jupyter_client import KernelManager

from test_prompt_e2e import text_of

OPENAI = "openai:gpt-4.1"


def text(*pieces, usage=(20, 5)):
    return {"steps": [{"text": list(pieces)}, {"usage": {"input": usage[0], "output": usage[1]}}]}


def tool(call_id, name, args):
    return {"steps": [{"toolCall": {"id": call_id, "name": name, "args": [json.dumps(args)]}}]}


class Kernel:
    """A jupyter_client kernel on a spec; cell() runs one cell and keeps its iopub messages."""

    def __init__(self, name):
        self.km = KernelManager(kernel_name=name)
        self.km.start_kernel()
        try:
            self.kc = self.km.client()
            self.kc.start_channels()
            self.kc.wait_for_ready(timeout=60)
        except Exception:
            self.km.shutdown_kernel(now=True)
            raise

    def cell(self, code, stdin=None, timeout=60):
        """(reply content, iopub messages) of code; stdin answers input_requests."""
        outputs = []
        kw = {"allow_stdin": stdin is not None}
        if stdin is not None:
            kw["stdin_hook"] = lambda m: self.kc.input(stdin(m["content"]["prompt"]))
        reply = self.kc.execute_interactive(code, output_hook=outputs.append, timeout=timeout, **kw)
        return reply["content"], outputs

    def ok(self, code, **kw):
        reply, out = self.cell(code, **kw)
        assert reply["status"] == "ok", (reply, text_of(out))
        return text_of(out)

    def close(self):
        try:
            self.kc.stop_channels()
        finally:
            self.km.shutdown_kernel(now=False)


def body(request):
    return json.dumps(request["body"])


@pytest.fixture(scope="module")
def kernel(agentkernel_env, model):
    name = "agent-magics"
    subprocess.run([str(agentkernel_env["binary"]), "install", "--prefix", str(agentkernel_env["prefix"]),
                    "--name", name, "--mode", "prompt", "--model", OPENAI, "--approve", "none", "--probe=false"],
                   check=True, capture_output=True)
    k = Kernel(name)
    yield k
    k.close()


def new_session(kernel):
    out = kernel.ok("%agent new")
    assert out.startswith("New session "), out
    return out.split()[2]


def test_streaming_is_throttled_and_exact(kernel, model):
    """A slow stream of 80 small chunks over about two seconds shows as one
    display updated in place: no second within it holds more than 20
    updates, and the last update holds the whole answer."""
    new_session(kernel)
    words = [f"w{i} " for i in range(80)]
    steps = []
    for w in words:
        steps += [{"text": [w]}, {"delayMs": 25}]
    model.enqueue({"steps": steps + [{"usage": {"input": 10, "output": 80}}]})
    reply, out = kernel.cell("Stream many words.")
    assert reply["status"] == "ok", reply
    answer = "".join(words)
    first = [m for m in out if m["msg_type"] == "display_data"
             and answer.startswith(m["content"]["data"].get("text/plain", "\0"))]
    assert first, [m["msg_type"] for m in out]
    display_id = first[0]["content"]["transient"]["display_id"]
    updates = [m for m in out if m["msg_type"] == "update_display_data"
               and m["content"]["transient"]["display_id"] == display_id]
    assert len(updates) >= 10, f"only {len(updates)} updates for a two-second stream"
    final = updates[-1]["content"]["data"]
    assert final["text/plain"] == answer and final["text/markdown"] == answer
    dates = [m["header"]["date"] for m in [first[0]] + updates]  # datetimes, as jupyter_client parses them
    for i, start in enumerate(dates):
        in_window = [d for d in dates[i:] if (d - start).total_seconds() < 1.0]
        assert len(in_window) <= 20, f"{len(in_window)} display messages within one second from {start}"


def test_edit_continues_from_the_edited_prompt(kernel, model):
    new_session(kernel)
    model.enqueue(text("one two three"))
    kernel.ok("Count to three.")
    model.enqueue(text("one to five"))
    kernel.ok("Now count to five.")
    history = kernel.ok("%agent history")
    ref = [l for l in history.splitlines() if "Now count to five." in l][0].split()[0]
    assert ref.startswith("#"), history

    model.enqueue(text("one two three four"))
    n = len(model.requests())
    out = kernel.ok(f"%agent edit {ref} Now count to four.")
    assert "one two three four" in out, out
    sent = model.requests()[n:]
    assert len(sent) == 1
    assert "Now count to four." in body(sent[0]) and "Count to three." in body(sent[0])
    assert "Now count to five." not in body(sent[0]) and "one to five" not in body(sent[0])

    history = kernel.ok("%agent history")
    assert "Now count to four." in history and "Now count to five." not in history, history
    model.enqueue(text("Four it was."))
    kernel.ok("Which number did you stop at?")
    last = body(model.requests()[-1])
    assert "Now count to four." in last and "one two three four" in last and "Now count to five." not in last


def test_followup_question_answered_on_stdin(kernel, model):
    new_session(kernel)
    model.enqueue(tool("q1", "ask_followup_question", {"question": "Which colour should the plot use?",
                                                       "suggestions": ["red", "blue"]}),
                  text("Blue it is."))
    prompts = []
    out = kernel.ok("Plot something.", stdin=lambda p: (prompts.append(p), "blue, please")[1])
    assert len(prompts) == 1, prompts
    assert "Which colour should the plot use?" in prompts[0] and "1. red" in prompts[0] and "2. blue" in prompts[0]
    assert "Blue it is." in out
    tool_result = body(model.requests()[-1])
    assert "<answer>\\nblue, please\\n</answer>" in tool_result, tool_result


def test_new_model_cost_help(kernel, model):
    out = kernel.ok("%agent help")
    for sub in ("new", "sessions", "resume", "history", "rewind", "fork", "edit", "model", "mode", "cost",
                "export", "attach", "webview", "mcp", "help"):
        assert f"%agent {sub}" in out, (sub, out)
    reply, out = kernel.cell("%agent frobnicate")
    assert reply["status"] == "error" and "unknown subcommand" in text_of(out)

    first = new_session(kernel)
    model.enqueue(text("Remember 17."))
    kernel.ok("The secret number is 17.")
    cost = kernel.ok("%agent cost")
    # gpt-4.1: $2 and $8 per million input and output tokens.
    assert cost.strip() == f"Session {first[:8]}: 20 input, 5 output tokens (cache 0 read, 0 written), $0.0001.", cost

    second = new_session(kernel)
    assert second != first
    assert kernel.ok("%agent cost").strip().startswith(f"Session {second[:8]}: 0 input, 0 output tokens")
    model.enqueue(text("I know no number."))
    kernel.ok("What was the secret number?")
    assert "17" not in body(model.requests()[-1]), "a new session was sent the old one's history"
    assert first[:8] in kernel.ok("%agent sessions")

    assert kernel.ok("%agent model").strip() == f"Model: {OPENAI}"
    assert kernel.ok("%agent model anthropic:claude-sonnet-4-5").strip() == "Model: anthropic:claude-sonnet-4-5"
    model.enqueue(text("Now from the other API."))
    out = kernel.ok("Who answers now?")
    assert "Now from the other API." in out
    assert model.requests()[-1]["path"] == "/v1/messages"
    assert model.requests()[-1]["body"]["model"] == "claude-sonnet-4-5"
    reply, out = kernel.cell("%agent model nosuch:thing")
    assert reply["status"] == "error" and "nosuch" in text_of(out)
    assert kernel.ok(f"%agent model {OPENAI}").strip() == f"Model: {OPENAI}"


def test_title_and_notebook_export(kernel, model, agentkernel_env, tmp_path):
    """The first prompt is the session's title in `sessions list` and in both
    exports; %agent export FILE.ipynb writes a valid notebook, as
    `agentkernel sessions export --format ipynb` does."""
    sid = new_session(kernel)
    model.enqueue(text("Hello there."))
    kernel.ok("Summarise the quarterly sales figures")
    model.enqueue(text("Done twice."))
    kernel.ok("And once more")

    listing = subprocess.run([str(agentkernel_env["binary"]), "sessions", "list", "--json"],
                             capture_output=True, text=True, check=True)
    row = [s for s in json.loads(listing.stdout) if s["id"] == sid][0]
    assert row["title"] == "Summarise the quarterly sales figures", row

    nb_path = tmp_path / "session.ipynb"
    out = kernel.ok(f"%agent export {nb_path}")
    assert str(nb_path) in out
    nb = nbformat.read(str(nb_path), as_version=4)
    nbformat.validate(nb)
    assert nb.metadata["agentkernel"]["session"]["title"] == "Summarise the quarterly sales figures"
    prompts = [c for c in nb.cells if c.metadata.get("agentkernel", {}).get("role") == "prompt"]
    assert [c.source for c in prompts] == ["Summarise the quarterly sales figures", "And once more"]
    assert "Hello there." in json.dumps(prompts[0].outputs)

    cli = tmp_path / "cli.ipynb"
    subprocess.run([str(agentkernel_env["binary"]), "sessions", "export", sid, "--format", "ipynb", "-o", str(cli)],
                   check=True, capture_output=True)
    assert nbformat.read(str(cli), as_version=4).cells == nb.cells

    jsonl = tmp_path / "session.jsonl"
    kernel.ok(f"%agent export {jsonl}")
    header = json.loads(jsonl.read_text().splitlines()[0])
    assert header["session"]["title"] == "Summarise the quarterly sales figures", header


def test_code_mode_cells_are_context_for_agent_cells(agentkernel_env, model):
    """In code mode the user's own cells, with what they printed, reach the
    model at the next %%agent cell, as %%code cells do in prompt mode."""
    name = "agent-magics-code"
    subprocess.run([str(agentkernel_env["binary"]), "install", "--prefix", str(agentkernel_env["prefix"]),
                    "--name", name, "--mode", "code", "--model", OPENAI, "--approve", "none", "--probe=false"],
                   check=True, capture_output=True)
    k = Kernel(name)
    try:
        assert "42" in k.ok("total = 6 * 7\nprint('total is', total)")
        reply, out = k.cell("{}['missing']")
        assert reply["status"] == "error" and "KeyError" in text_of(out)
        model.enqueue(text("It is 42."))
        assert "It is 42." in k.ok("%%agent\nWhat is total?")
        sent = model.requests()[-1]["body"]["messages"][-1]
        assert "total = 6 * 7" in json.dumps(sent) and "total is 42" in json.dumps(sent), sent
        assert "{}['missing']" in json.dumps(sent) and "KeyError" in json.dumps(sent), sent

        k.ok("total += 1")
        model.enqueue(text("Now 43."))
        k.ok("%%agent\nAnd now?")
        sent = json.dumps(model.requests()[-1]["body"]["messages"][-1])
        assert "total += 1" in sent and "total = 6 * 7" not in sent, sent
    finally:
        k.close()
