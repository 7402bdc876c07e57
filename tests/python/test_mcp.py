"""MCP end to end: a notebook whose directory has a .mcp.json naming the
reference server (npm's @modelcontextprotocol/server-everything, run with
node over stdio), executed by nbconvert on a prompt-mode kernel with the
scripted model. `%agent mcp` lists the server and its tools; the model calls
mcp__everything__echo; the result reaches the cell and the model.
"""

import json
import shutil
from pathlib import Path

import nbformat
import pytest

from conftest import REPO
from test_prompt_e2e import install_local as install, nbconvert, outputs_of, tool

EVERYTHING = REPO / "tests/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js"


@pytest.fixture()
def workspace(tmp_path):
    if not EVERYTHING.exists():
        pytest.skip("server-everything is not installed: run make mcp-server")
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    ws = tmp_path / "project"
    ws.mkdir()
    (ws / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "everything": {"command": "node", "args": [str(EVERYTHING), "stdio"]},
        "broken": {"command": "no-such-mcp-server-command"},
    }}))
    return ws


def test_notebook_calls_mcp_echo(agentkernel_env, model, workspace, tmp_path):
    kernel = install(agentkernel_env, "agent-mcp", "openai:gpt-4.1", "all")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("%agent mcp"),
                nbformat.v4.new_code_cell("Echo 'hello from the notebook' with the MCP server.")]
    path = workspace / "mcp.ipynb"
    nbformat.write(nb, str(path))
    n0 = len(model.requests())
    model.enqueue(tool("c1", "mcp__everything__echo", {"message": "hello from the notebook"}, say="Calling echo."),
                  tool("c2", "attempt_completion", {"result": "Echoed."}))
    out = nbconvert(path, kernel, tmp_path / "out")

    _, listing, _ = outputs_of(out.cells[0])
    assert "everything: ready (stdio, project)" in listing, listing
    assert "mcp__everything__echo" in listing and "mcp__everything__get-tiny-image" in listing, listing
    assert "broken: failed" in listing and "not found" in listing, listing

    _, body, _ = outputs_of(out.cells[1])
    assert "Echo: hello from the notebook" in body, body
    assert "**Result:** Echoed." in body, body

    reqs = model.requests()[n0:]
    assert len(reqs) == 2, [r["path"] for r in reqs]
    offered = [t["function"]["name"] for t in reqs[0]["body"]["tools"]]
    assert "mcp__everything__echo" in offered and "execute_code" in offered, offered
    echo = next(t for t in reqs[0]["body"]["tools"] if t["function"]["name"] == "mcp__everything__echo")
    assert "message" in json.dumps(echo["function"]["parameters"]), echo
    assert "Echo: hello from the notebook" in json.dumps(reqs[1]["body"]), "the MCP result did not reach the model"


def test_stdin_approves_mcp_tool_and_policy_denies(agentkernel_env, model, workspace):
    """The use_mcp_server ask goes to the notebook's stdin, naming the tool and
    its server; without stdin the headless policy (none) denies it."""
    from jupyter_client import KernelManager
    from test_prompt_e2e import text_of

    name = install(agentkernel_env, "agent-mcp-none", "openai:gpt-4.1", "none")
    km = KernelManager(kernel_name=name)
    km.start_kernel(cwd=str(workspace))
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)

        def cell(code, stdin=None):
            out = []
            kw = {"allow_stdin": stdin is not None}
            if stdin is not None:
                kw["stdin_hook"] = lambda m: kc.input(stdin(m["content"]["prompt"]))
            reply = kc.execute_interactive(code, output_hook=out.append, timeout=120, **kw)
            return reply["content"], out

        cell("%agent mcp")
        prompts = []
        model.enqueue(tool("m1", "mcp__everything__echo", {"message": "approved on stdin"}),
                      {"steps": [{"text": ["Echoed."]}]})
        reply, out = cell("Echo it.", stdin=lambda p: (prompts.append(p), "y")[1])
        assert reply["status"] == "ok", reply
        assert prompts and "the tool echo of the MCP server everything" in prompts[0], prompts
        assert "Echo: approved on stdin" in text_of(out), text_of(out)

        n0 = len(model.requests())
        model.enqueue(tool("m2", "mcp__everything__echo", {"message": "never"}), {"steps": [{"text": ["Denied."]}]})
        reply, out = cell("Echo again, without asking me.")
        assert reply["status"] == "ok", reply
        last = json.dumps(model.requests()[n0 + 1]["body"])
        assert "Echo: never" not in last and "Permission denied" in last, last
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
