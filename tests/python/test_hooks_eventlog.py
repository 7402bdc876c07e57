"""Hooks and the event log end to end: a notebook prompt cell (real
jupyter_client, real ipykernel backing kernel, the scripted model server)
and `agentkernel ask` with PreToolUse hooks from the workspace's
.agentkernel/settings.json and the user's config file; then the day's
event log, read directly and through `agentkernel logs`."""

import json
import os
import subprocess
from pathlib import Path

import pytest
from jupyter_client import KernelManager

from test_prompt_e2e import MODELS, install_local as install, text, text_of, tool

HOOK = """#!/bin/sh
input=$(cat)
printf '%s\\n' "$input" >> "$(dirname "$0")/hook-inputs.jsonl"
case "$input" in
  *forbidden*) echo "policy: forbidden() may not run here" >&2; exit 2 ;;
esac
exit 0
"""


def workspace(tmp_path):
    """A workspace whose settings block execute_code calls that mention forbidden."""
    ws = tmp_path / "ws"
    (ws / ".agentkernel").mkdir(parents=True)
    hook = ws / "guard.sh"
    hook.write_text(HOOK)
    hook.chmod(0o755)
    (ws / ".agentkernel" / "settings.json").write_text(json.dumps({"hooks": {"PreToolUse": [
        {"matcher": "execute_code", "hooks": [{"type": "command", "command": str(hook), "timeout": 30}]}]}}))
    return ws


def user_config(tmp_path):
    """A config file whose UserPromptSubmit hook records each prompt's input."""
    seen = tmp_path / "user-hook.jsonl"
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"hooks": {"UserPromptSubmit": [
        {"hooks": [{"type": "command", "command": f"cat >> {seen}; echo >> {seen}"}]}]}}))
    return cfg, seen


def log_entries():
    logs = Path(os.environ["AGENTKERNEL_DATA_DIR"]) / "logs"
    out = []
    for f in sorted(logs.glob("*.jsonl")):
        out += [json.loads(line) for line in f.read_text().splitlines()]
    return out


def session_of(prompt):
    ids = [e["session_id"] for e in log_entries() if e["event"] == "prompt" and e.get("text") == prompt]
    assert len(ids) == 1, ids
    return ids[0]


def tool_results(body):
    """The text of the tool results in a request body (OpenAI format)."""
    return [m["content"] if isinstance(m["content"], str) else json.dumps(m["content"])
            for m in body["messages"] if m["role"] == "tool"]


def test_notebook_pretooluse_hook_blocks_execute_code(agentkernel_env, model, tmp_path):
    ws = workspace(tmp_path)
    cfg, seen = user_config(tmp_path)
    name = install(agentkernel_env, "agent-e2e-hooks", MODELS["openai"], "all")
    km = KernelManager(kernel_name=name)
    km.start_kernel(cwd=str(ws), env={**os.environ, "AGENTKERNEL_CONFIG": str(cfg)})
    kc = km.client()
    try:
        kc.start_channels()
        kc.wait_for_ready(timeout=60)
        n0 = len(model.requests())
        model.enqueue(tool("c1", "execute_code", {"code": "forbidden(); open('ran.txt', 'w').write('x')"}),
                      tool("c2", "execute_code", {"code": "print(6 * 7)"}),
                      text("The policy stopped the first call; 6 × 7 = 42."))
        outputs = []
        prompt = "Write ran.txt, then compute 6 times 7."
        reply = kc.execute_interactive(prompt, output_hook=outputs.append, timeout=120, allow_stdin=False)
        assert reply["content"]["status"] == "ok", reply["content"]
        shown = text_of(outputs)
        assert "blocked by a PreToolUse hook: policy: forbidden() may not run here" in shown, shown
        assert "42" in shown, shown
        assert not (ws / "ran.txt").exists(), "the blocked call ran"

        # The model's next request carries the hook's stderr as the tool result.
        reqs = model.requests()[n0:]
        assert len(reqs) == 3, len(reqs)
        results = tool_results(reqs[1]["body"])
        assert len(results) == 1 and "policy: forbidden() may not run here" in results[0], results
        assert "42" in tool_results(reqs[2]["body"])[-1]

        # The hook got Claude Code's fields; so did the user's prompt hook.
        inputs = [json.loads(line) for line in (ws / "hook-inputs.jsonl").read_text().splitlines()]
        assert [i["tool_input"]["code"] for i in inputs] == ["forbidden(); open('ran.txt', 'w').write('x')", "print(6 * 7)"]
        first = inputs[0]
        assert first["hook_event_name"] == "PreToolUse" and first["tool_name"] == "execute_code"
        assert first["cwd"] == str(ws) and first["tool_use_id"] == "c1" and first["session_id"]
        user = json.loads(seen.read_text().splitlines()[0])
        assert user["hook_event_name"] == "UserPromptSubmit" and user["prompt"] == prompt
        assert user["session_id"] == first["session_id"]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=False)

    # The day's log holds the prompt and the tool events, from the notebook.
    sid = session_of(prompt)
    mine = [e for e in log_entries() if e.get("session_id") == sid]
    assert all(e["source"] == "notebook" for e in mine), {e["source"] for e in mine}
    events = [(e["event"], e.get("kind", ""), e.get("tool", "")) for e in mine]
    assert ("prompt", "", "") in events
    assert ("hook", "blocked", "execute_code") in events
    assert ("tool_start", "", "execute_code") in events
    ends = [e for e in mine if e["event"] == "tool_end"]
    assert len(ends) == 1 and ends[0]["ok"] is True and ends[0]["tool_id"] == "c2", ends
    result = [e for e in mine if e["event"] == "result"]
    assert len(result) == 1 and result[0]["cost_usd"] >= 0 and result[0]["tokens_in"] > 0, result
    finished = [e for e in mine if e["event"] == "message_finished" and e["kind"] == "say:text"]
    assert any("6 × 7 = 42" in e["text"] for e in finished), finished
    assert "sk-test-not-real" not in json.dumps(mine)

    # agentkernel logs prints them.
    out = subprocess.run([str(agentkernel_env["binary"]), "logs", "--session", sid[:8]],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines and all(sid[:8] in line for line in lines), out.stdout
    assert any("prompt: " + prompt in line for line in lines), out.stdout
    assert any("hook blocked execute_code" in line for line in lines), out.stdout


def test_ask_with_hooks(agentkernel_env, model, tmp_path):
    ws = workspace(tmp_path)
    env = {**os.environ, "AGENTKERNEL_CONFIG": str(tmp_path / "none.json")}
    binary = str(agentkernel_env["binary"])
    n0 = len(model.requests())
    model.enqueue(tool("c1", "execute_code", {"code": "forbidden()"}), text("Blocked, as expected."))
    prompt = "Call forbidden() in the kernel."
    proc = subprocess.run([binary, "ask", prompt, "--model", MODELS["openai"], "--approve", "all",
                           "--output-format", "json"], cwd=ws, env=env, capture_output=True, text=True, timeout=120)
    # The blocked call is a denied action: the run fails, and says which.
    assert proc.returncode == 1 and "denied (execute_code)" in proc.stderr, proc.stderr
    result = json.loads(proc.stdout)
    assert result["result"] == "Blocked, as expected.", result
    (denial,) = result["permission_denials"]
    assert denial["tool_name"] == "execute_code" and denial["tool_use_id"] == "c1", denial
    assert denial["tool_input"] == {"code": "forbidden()"} and "PreToolUse hook" in denial["reason"], denial
    reqs = model.requests()[n0:]
    assert len(reqs) == 2
    assert "policy: forbidden() may not run here" in tool_results(reqs[1]["body"])[0]
    sid = result["session_id"]
    mine = [e for e in log_entries() if e.get("session_id") == sid]
    assert {e["source"] for e in mine} == {"ask"}, mine
    assert [e["text"] for e in mine if e["event"] == "prompt"] == [prompt]
    assert any(e["event"] == "hook" and "forbidden() may not run here" in e["text"] for e in mine), mine

    # A UserPromptSubmit hook that exits 2 keeps the prompt from the model
    # and tells the person why.
    (ws / ".agentkernel" / "settings.json").write_text(json.dumps({"hooks": {"UserPromptSubmit": [
        {"hooks": [{"type": "command", "command": "echo 'no prompts after hours' >&2; exit 2"}]}]}}))
    n1 = len(model.requests())
    proc = subprocess.run([binary, "ask", "Anything?", "--model", MODELS["openai"]],
                          cwd=ws, env=env, capture_output=True, text=True, timeout=120)
    # The run did not do what was asked: it fails, with the hook's reason.
    assert proc.returncode == 1, proc.stderr
    assert "hook blocked the prompt: no prompts after hours" in proc.stderr, proc.stderr
    assert len(model.requests()) == n1, "a blocked prompt reached the model"


def test_run_with_hooks(agentkernel_env, model, tmp_path):
    import nbformat
    ws = workspace(tmp_path)
    name = install(agentkernel_env, "agent-e2e-hooks-run", MODELS["openai"], "all")
    prompt = "Call forbidden() from a headless run."
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": name, "display_name": name, "language": "markdown"}
    nb.cells = [nbformat.v4.new_code_cell(prompt)]
    nbformat.write(nb, str(ws / "run.ipynb"))
    model.enqueue(tool("c1", "execute_code", {"code": "forbidden()"}), text("The hook said no."))
    env = {**os.environ, "AGENTKERNEL_CONFIG": str(tmp_path / "none.json")}
    proc = subprocess.run([str(agentkernel_env["binary"]), "run", "run.ipynb", "-o", "out.ipynb", "--quiet"],
                          cwd=ws, env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    out = nbformat.read(str(ws / "out.ipynb"), as_version=4)
    shown = json.dumps(out.cells[0]["outputs"])
    assert "forbidden() may not run here" in shown and "The hook said no." in shown, shown
    sid = session_of(prompt)
    mine = [e for e in log_entries() if e.get("session_id") == sid]
    assert {e["source"] for e in mine} == {"run"}, mine
    assert any(e["event"] == "hook" and e["kind"] == "blocked" for e in mine), mine
