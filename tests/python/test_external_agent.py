"""An external ACP agent answers a notebook's prompt cells: Claude Code itself
(npm's @zed-industries/claude-agent-acp over @anthropic-ai/claude-code's own
binary, tests/acp), offline against the scripted Anthropic server, driven by a
real kernel through jupyter_client.

The kernelspec is installed with --agent; `%agent use` switches a kernel that
began on a model. Claude Code asks (through ACP) before it calls the live
kernel's MCP tool; the ask is the notebook's stdin prompt; the code runs in the
user's own backing kernel, where a %%code cell sees the variable.
"""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from test_prompt_e2e import Client, text_of

REPO = Path(__file__).resolve().parents[2]
MODS = REPO / "tests" / "acp" / "node_modules"
AGENT_JS = MODS / "@zed-industries" / "claude-agent-acp" / "dist" / "index.js"
CLAUDE = MODS / "@anthropic-ai" / "claude-code" / "bin" / "claude.exe"


@pytest.fixture
def claude(tmp_path, monkeypatch, model):
    """The command line of claude-agent-acp, and Claude Code's environment
    (offline: the scripted server, a scratch home, no non-essential traffic)."""
    node = shutil.which("node")
    if not node or not AGENT_JS.exists() or not CLAUDE.exists():
        pytest.skip("claude-agent-acp is not installed: run make acp-client")
    home = tmp_path / "home"
    home.mkdir()
    for k, v in {"HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude"), "CLAUDE_CODE_EXECUTABLE": str(CLAUDE),
                 "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
                 "IS_SANDBOX": "1"}.items():
        monkeypatch.setenv(k, v)
    return f"{node} {AGENT_JS}"


def anthropic_tool(call_id, name, args, say):
    raw = json.dumps(args)
    return {"steps": [{"text": [say]}, {"toolCall": {"id": call_id, "name": name, "args": [raw]}}, {"stop": "tool_use"}]}


def answer(*pieces):
    return {"steps": [{"text": list(pieces)}, {"stop": "end_turn"}]}


def install(env, name, *args):
    subprocess.run([str(env["binary"]), "install", "--prefix", str(env["prefix"]), "--name", name, "--mode", "prompt",
                    "--probe=false", *args], check=True, capture_output=True)
    return name


def test_claude_code_runs_in_the_live_kernel(agentkernel_env, model, claude):
    name = install(agentkernel_env, "agent-claude", "--agent", claude)
    k = Client(name)
    try:
        model.enqueue(anthropic_tool("toolu_1", "mcp__agentkernel__execute_code",
                                     {"code": "df = list(range(5))\nprint(sum(df))"}, "Making df."),
                      answer("df holds 0 to 4; their sum is 10."))
        prompts = []
        reply, out = k.cell("Make df in my kernel", stdin=lambda p: (prompts.append(p), "y")[1], timeout=120)
        assert reply["status"] == "ok", reply
        said = text_of(out)
        assert "Making df." in said and "their sum is 10." in said, said
        assert len(prompts) == 1 and "mcp__agentkernel__execute_code" in prompts[0], prompts
        # The code ran in the notebook's own backing kernel.
        reply, out = k.cell("%%code\nprint(df[-1] * 10)")
        assert reply["status"] == "ok" and "40" in text_of(out), text_of(out)
        # Claude Code was given the kernel's output as the tool's result.
        sent = json.dumps(model.requests()[-1]["body"])
        assert "tool_result" in sent and "[stdout]\\n10" in sent, sent
        # The turn is the session's: the history shows the agent's words and
        # its tool call.
        _, out = k.cell("%agent history")
        history = text_of(out)
        assert "their sum is 10." in history and "claude-agent-acp" in history, history
    finally:
        k.close()


def test_agent_use_switches_a_session_to_claude_code(agentkernel_env, model, claude):
    name = install(agentkernel_env, "agent-switch", "--model", "openai:gpt-4.1", "--approve", "none")
    k = Client(name)
    try:
        model.enqueue({"steps": [{"text": ["The first answer, from the model."]}]})
        reply, out = k.cell("First question")
        assert "The first answer, from the model." in text_of(out), text_of(out)

        reply, out = k.cell("%agent use " + claude)
        assert reply["status"] == "ok" and "Agent:" in text_of(out), text_of(out)
        model.enqueue(answer("Claude Code here; I see the first question."))
        reply, out = k.cell("Second question", timeout=120)
        assert reply["status"] == "ok", reply
        assert "Claude Code here" in text_of(out), text_of(out)
        # Claude Code's new session was told the conversation so far.
        sent = json.dumps(model.requests()[-1]["body"])
        assert "First question" in sent and "The first answer, from the model." in sent, sent

        # Back to the model: it is sent both exchanges.
        reply, out = k.cell("%agent model openai:gpt-4.1")
        model.enqueue({"steps": [{"text": ["The model again."]}]})
        reply, out = k.cell("Third question")
        assert "The model again." in text_of(out)
        sent = json.dumps(model.requests()[-1]["body"])
        assert "Claude Code here" in sent and "Second question" in sent, sent
    finally:
        k.close()
