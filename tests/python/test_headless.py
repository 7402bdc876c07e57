"""Headless automation from the command line: agentkernel run, ask and sessions.

The examples of notebooks/examples run through the real binary: the prompt-mode
tour offline through its recorded cassette, the code-mode notebook as is. Every
notebook written is validated with Debian's nbformat. nbconvert executes the tour
with a prompt-mode kernelspec whose model is the cassette. ask's stream-json is
parsed line by line; the sessions it leaves go through list, show, search,
export (jsonl, ipynb), rm, restore and import. Bad input — a corrupt notebook, a
missing or diverging cassette, an unknown kernelspec or session id — must give a
clear message, a non-zero exit and no output file.
"""

import json
import os
import re
import shutil
import subprocess
import threading
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "notebooks" / "examples"
TOUR = EXAMPLES / "tour.ipynb"
TOUR_CASSETTE = EXAMPLES / "tour.cassette.jsonl"
CODE_MODE = EXAMPLES / "code-mode.ipynb"
ASK_CASSETTE = EXAMPLES / "ask.cassette.jsonl"
ASK_PROMPT = "What is 6 times 7? Check it in the kernel."
from stack import JUPYTER
TIMEOUT = 180


@pytest.fixture(scope="module")
def cli(agentkernel_env, tmp_path_factory):
    """The binary, with the examples' kernelspecs (agent-prompt, agent) in a private prefix."""
    tmp = tmp_path_factory.mktemp("headless")
    binary = str(agentkernel_env["binary"])
    prefix = tmp / "prefix"
    for name, mode in (("agent-prompt", "prompt"), ("agent", "code")):
        proc = subprocess.run(
            [binary, "install", "--prefix", str(prefix), "--name", name, "--mode", mode, "--probe=false"],
            capture_output=True, text=True, timeout=TIMEOUT,
        )
        assert proc.returncode == 0, proc.stderr
    return {"binary": binary, "prefix": prefix, "tmp": tmp}


@pytest.fixture
def env(cli, tmp_path_factory):
    """A clean environment: private kernelspecs, store and config; no model configured."""
    home = tmp_path_factory.mktemp("env")
    e = {k: v for k, v in os.environ.items()
         if not k.startswith(("AGENTKERNEL_", "OPENAI_", "ANTHROPIC_"))}
    jp = str(cli["prefix"] / "share" / "jupyter")
    e["JUPYTER_PATH"] = os.pathsep.join(filter(None, [jp, os.environ.get("JUPYTER_PATH")]))
    e["AGENTKERNEL_DATA_DIR"] = str(home / "data")
    e["XDG_CONFIG_HOME"] = str(home / "config")
    return e


def agentkernel(cli, env, *args, input=None):
    return subprocess.run(
        [cli["binary"], *map(str, args)], env=env, capture_output=True, text=True,
        timeout=TIMEOUT, input=input if input is not None else "",
    )


def read_valid(path):
    """Read a notebook and validate it against the nbformat schema."""
    nb = nbformat.read(str(path), as_version=nbformat.NO_CONVERT)
    nbformat.validate(nb)
    return nb


def text_of(cell):
    """Everything a code cell shows, as one string (images as their mime type)."""
    parts = []
    for o in cell.get("outputs", []):
        if o["output_type"] == "stream":
            parts.append(o["text"])
        elif o["output_type"] == "error":
            parts.append(o["ename"] + ": " + o["evalue"])
        else:
            for mime, value in o.get("data", {}).items():
                parts.append(mime if mime.startswith("image/") else
                             (value if isinstance(value, str) else json.dumps(value)))
    return "\n".join(parts)


def cells_by_id(nb):
    return {c["id"]: c for c in nb.cells}


BY = re.compile(r"allowed by the user \([^)]*\)")


def normalised_outputs(nb):
    """The code cells' outputs with image data and approval attributions masked."""
    out = []
    for c in nb.cells:
        if c.cell_type != "code":
            continue
        outs = []
        for o in c.outputs:
            o = json.loads(json.dumps(o))
            for mime in list(o.get("data", {})):
                if mime.startswith("image/"):
                    o["data"][mime] = "<image>"
            outs.append(BY.sub("allowed by the user (…)", json.dumps(o, sort_keys=True)))
        out.append((c.id, c.get("execution_count"), outs))
    return out


def check_tour(nb):
    cells = cells_by_id(nb)
    fib = text_of(cells["fibonacci"])
    assert "[0, 1, 1, 2, 3, 5, 8, 13, 21, 34]" in fib, fib
    assert "The first ten Fibonacci numbers are" in fib, fib
    assert "[0, 1, 1, 4, 9, 25, 64, 169, 441, 1156]" in text_of(cells["squares"])
    assert "1870" in text_of(cells["sum"])
    plot = text_of(cells["plot"])
    assert "image/png" in plot and "Plotted" in plot, plot
    assert nb.metadata.kernelspec.name == "agent-prompt"
    for c in nb.cells:
        if c.cell_type == "code":
            assert not [o for o in c.outputs if o["output_type"] == "error"], c.id


def test_run_tour_replays_offline(cli, env, tmp_path):
    before = TOUR.read_bytes()
    out = tmp_path / "tour.out.ipynb"
    p = agentkernel(cli, env, "run", TOUR, "-o", out, "--replay", TOUR_CASSETTE)
    assert p.returncode == 0, p.stderr
    assert "[4/4]" in p.stderr and "wrote" in p.stderr, p.stderr
    check_tour(read_valid(out))
    assert TOUR.read_bytes() == before, "the input notebook was changed"


def test_replaying_twice_gives_the_same_outputs(cli, env, tmp_path):
    outs = []
    for i in range(2):
        out = tmp_path / f"run{i}.ipynb"
        p = agentkernel(cli, env, "run", TOUR, "-o", out, "--replay", TOUR_CASSETTE, "--quiet")
        assert p.returncode == 0, p.stderr
        assert p.stderr == "", p.stderr
        outs.append(normalised_outputs(read_valid(out)))
    assert outs[0] == outs[1]


def test_run_default_output_next_to_input(cli, env, tmp_path):
    nb = tmp_path / "code.ipynb"
    shutil.copy(CODE_MODE, nb)
    p = agentkernel(cli, env, "run", nb)
    assert p.returncode == 0, p.stderr
    out = tmp_path / "code.out.ipynb"
    result = read_valid(out)
    cells = cells_by_id(result)
    assert "hello from cpython" in text_of(cells["hello"])
    assert "[2, 3, 5, 7, 11" in text_of(cells["primes"])
    assert "<b>15 primes</b> below 50" in text_of(cells["html"])
    assert "stderr is kept too" in text_of(cells["stderr"])
    assert "image/png" in text_of(cells["plot"])
    assert [c.execution_count for c in result.cells if c.cell_type == "code"] == [1, 2, 3, 4, 5]
    assert result.metadata.language_info.name == "python"
    assert nbformat.read(str(nb), as_version=4).cells[1].outputs == [], "the input notebook was changed"


def test_run_in_place_and_to_stdout(cli, env, tmp_path):
    nb = tmp_path / "code.ipynb"
    shutil.copy(CODE_MODE, nb)
    p = agentkernel(cli, env, "run", nb, "-o", "-", "--quiet")
    assert p.returncode == 0, p.stderr
    nbformat.validate(nbformat.reads(p.stdout, as_version=4))
    p = agentkernel(cli, env, "run", nb, "-o", nb, "--quiet")
    assert p.returncode == 0, p.stderr
    assert "hello from" in text_of(cells_by_id(read_valid(nb))["hello"])
    assert sorted(x.name for x in tmp_path.iterdir()) == ["code.ipynb"]


def test_run_error_cell(cli, env, tmp_path):
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "agent", "display_name": "Agent (code)"}})
    nb.cells = [nbformat.v4.new_code_cell("print('before')"), nbformat.v4.new_code_cell("1/0"),
                nbformat.v4.new_code_cell("print('after')")]
    path = tmp_path / "err.ipynb"
    nbformat.write(nb, str(path))
    out = tmp_path / "err.out.ipynb"
    p = agentkernel(cli, env, "run", path, "-o", out)
    assert p.returncode != 0
    assert "ZeroDivisionError" in p.stderr and "nothing written" in p.stderr, p.stderr
    assert not out.exists()
    p = agentkernel(cli, env, "run", path, "-o", out, "--allow-errors")
    assert p.returncode == 0, p.stderr
    cells = read_valid(out).cells
    assert "ZeroDivisionError" in text_of(cells[1]) and "after" in text_of(cells[2])


def test_nbconvert_with_prompt_kernelspec_and_cassette(cli, env, tmp_path):
    prefix = tmp_path / "prefix"
    p = agentkernel(cli, env, "install", "--prefix", prefix, "--name", "agent-replay", "--mode", "prompt",
                    "--model", f"replay:{TOUR_CASSETTE}", "--approve", "all", "--probe=false")
    assert p.returncode == 0, p.stderr
    # The cassette was recorded by agentkernel run, which offers the notebook tools; under nbconvert the
    # kernel is told its notebook's file, as the README says to, and offers the same tools.
    e = dict(env, JUPYTER_PATH=str(prefix / "share" / "jupyter"), AGENTKERNEL_NOTEBOOK="tour.ipynb")
    shutil.copy(TOUR, tmp_path / "tour.ipynb")
    proc = subprocess.run(
        [JUPYTER, "nbconvert", "--to", "notebook", "--execute", "tour.ipynb",
         "--ExecutePreprocessor.kernel_name=agent-replay", "--output", "converted.ipynb"],
        cwd=tmp_path, env=e, capture_output=True, text=True, timeout=TIMEOUT,
    )
    assert proc.returncode == 0, proc.stderr
    nb = read_valid(tmp_path / "converted.ipynb")
    nb.metadata.kernelspec.name = "agent-prompt"  # nbconvert records the spec it ran
    check_tour(nb)


def stream_json(cli, env, *extra):
    p = agentkernel(cli, env, "ask", ASK_PROMPT, "--model", f"replay:{ASK_CASSETTE}",
                    "--output-format", "stream-json", *extra)
    assert p.returncode == 0, p.stderr
    events = [json.loads(line) for line in p.stdout.splitlines()]
    return events


def test_ask_stream_json(cli, env):
    """Claude Code's stream-json: system/init, the model's messages and the tool
    results from the API history, agentkernel's own events as system events,
    and the result last."""
    events = stream_json(cli, env)
    init, result = events[0], events[-1]
    assert init["type"] == "system" and init["subtype"] == "init"
    sid = init["session_id"]
    assert re.fullmatch(r"[0-9a-f-]{36}", sid), sid
    assert init["model"] == f"replay:{ASK_CASSETTE}"
    assert "execute_code" in init["tools"] and init["resumed"] is False
    assert init["permissionMode"] == "default" and init["mcp_servers"] == [] and init["cwd"]
    kinds = {e["type"] for e in events}
    assert kinds == {"system", "assistant", "user", "result"}, kinds
    for e in events:
        assert e["session_id"] == sid and e["uuid"], e
    standard = [e for e in events if e["type"] != "system"]
    # execute_code and its result, then attempt_completion and its result.
    assert [e["type"] for e in standard] == ["assistant", "user", "assistant", "user", "result"], standard
    assert [b["name"] for b in standard[2]["message"]["content"] if b["type"] == "tool_use"] == ["attempt_completion"]
    call = next(b for b in standard[0]["message"]["content"] if b["type"] == "tool_use")
    assert call["name"] == "execute_code" and call["input"]["code"] == "6 * 7", call
    assert standard[0]["message"]["role"] == "assistant" and standard[0]["parent_tool_use_id"] is None
    (tool_result,) = standard[1]["message"]["content"]
    assert tool_result["type"] == "tool_result" and tool_result["tool_use_id"] == call["id"]
    outputs = [e for e in events if e["type"] == "system" and e["subtype"] == "kernel_output"]
    assert any(o["msg_type"] == "execute_result" and o["content"]["data"]["text/plain"] == "42" for o in outputs)
    assert result["subtype"] == "success" and result["is_error"] is False
    assert result["result"] == "6 × 7 = 42 (checked in the kernel)." and result["completed"] is True
    assert result["num_turns"] == 2
    assert result["usage"]["input_tokens"] == 1850 and result["usage"]["output_tokens"] == 38
    assert result["total_cost_usd"] == pytest.approx((1850 * 2 + 38 * 8) / 1e6)
    assert isinstance(result["duration_ms"], int) and result["duration_ms"] >= 0
    assert isinstance(result["duration_api_ms"], int) and result["duration_api_ms"] <= result["duration_ms"]
    assert result["permission_denials"] == []


def test_ask_partial_messages_are_deltas(cli, env):
    events = stream_json(cli, env, "--include-partial-messages")
    deltas = [e["event"]["delta"]["text"] for e in events
              if e["type"] == "stream_event" and e["event"]["type"] == "content_block_delta"
              and e["event"]["delta"]["type"] == "text_delta"]
    texts = [b["text"] for e in events if e["type"] == "assistant"
             for b in e["message"]["content"] if b["type"] == "text"]
    assert deltas and "".join(deltas) == "".join(texts), (deltas, texts)


def test_ask_stream_json_input(cli, env, model, tmp_path):
    """User messages from stdin are turns of one session; the agent's code ask is a
    can_use_tool control_request, answered by a control_response line; EOF ends the run."""
    from test_prompt_e2e import text, tool
    e = dict(env, OPENAI_BASE_URL=model.url + "/v1", OPENAI_API_KEY="sk-test-not-real")
    model.enqueue(tool("c1", "execute_code", {"code": "print(6 * 7)"}), text("It printed 42."), text("Second answer."))
    p = subprocess.Popen([cli["binary"], "ask", "--model", "openai:gpt-4.1", "--input-format", "stream-json",
                          "--output-format", "stream-json"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=e, cwd=tmp_path)
    watchdog = threading.Timer(TIMEOUT, p.kill)
    watchdog.start()
    try:
        def send(obj):
            p.stdin.write(json.dumps(obj) + "\n")
            p.stdin.flush()

        def user(content):
            send({"type": "user", "message": {"role": "user", "content": content}})

        user("Print six times seven in the kernel.")
        events, results = [], 0
        for line in p.stdout:
            ev = json.loads(line)
            events.append(ev)
            if ev["type"] == "control_request":
                req = ev["request"]
                assert req["subtype"] == "can_use_tool" and req["tool_name"] == "execute_code", req
                assert req["tool_use_id"] == "c1" and req["input"] == {"code": "print(6 * 7)"}, req
                send({"type": "control_response", "response": {"subtype": "success", "request_id": ev["request_id"],
                                                                 "response": {"behavior": "allow"}}})
            elif ev["type"] == "result":
                results += 1
                if results == 1:
                    user([{"type": "text", "text": "And a second question."}])
                else:
                    p.stdin.close()
        assert p.wait() == 0, p.stderr.read()
    finally:
        watchdog.cancel()
    results = [ev for ev in events if ev["type"] == "result"]
    assert [r["result"] for r in results] == ["It printed 42.", "Second answer."], results
    assert len({ev["session_id"] for ev in events if ev["type"] != "control_request"}) == 1
    printed = [ev["content"]["text"] for ev in events
               if ev["type"] == "system" and ev["subtype"] == "kernel_output" and ev["msg_type"] == "stream"]
    assert printed == ["42\n"], printed


def test_ask_text_json_and_stdin(cli, env):
    p = agentkernel(cli, env, "ask", ASK_PROMPT, "--model", f"replay:{ASK_CASSETTE}")
    assert p.returncode == 0, p.stderr
    assert p.stdout == "6 × 7 = 42 (checked in the kernel).\n"
    p = agentkernel(cli, env, "ask", "-", "--model", f"replay:{ASK_CASSETTE}", "--output-format", "json",
                    input=ASK_PROMPT)
    assert p.returncode == 0, p.stderr
    res = json.loads(p.stdout)
    assert res["type"] == "result" and res["result"].startswith("6 × 7 = 42")


def test_ask_diverging_and_missing_cassette(cli, env):
    p = agentkernel(cli, env, "ask", "Something else entirely", "--model", f"replay:{ASK_CASSETTE}",
                    "--output-format", "json")
    assert p.returncode != 0
    res = json.loads(p.stdout)
    assert res["is_error"] is True and res["subtype"] == "error_during_execution", res
    assert "diverged" in res["errors"][0], res
    p = agentkernel(cli, env, "ask", ASK_PROMPT, "--model", "replay:/nonexistent/cassette.jsonl")
    assert p.returncode != 0 and "cassette" in p.stderr and p.stdout == "", p.stderr
    p = agentkernel(cli, env, "ask", ASK_PROMPT)
    assert p.returncode != 0 and "no model configured" in p.stderr, p.stderr


def sessions(cli, env, *args, ok=True):
    p = agentkernel(cli, env, "sessions", *args)
    if ok:
        assert p.returncode == 0, p.stderr
    return p


def test_sessions_round_trip(cli, env, tmp_path):
    sid = stream_json(cli, env)[0]["session_id"]
    listed = json.loads(sessions(cli, env, "list", "--json").stdout)
    assert [s["id"] for s in listed] == [sid]
    s = listed[0]
    assert s["title"] == ASK_PROMPT and s["mode"] == "ask" and s["cost_usd"] > 0 and not s["archived"]
    table = sessions(cli, env, "list").stdout
    assert sid[:8] in table and "TITLE" in table

    shown = json.loads(sessions(cli, env, "show", sid[:8], "--json").stdout)
    assert shown["session"]["id"] == sid and shown["ui"] and shown["api"]
    assert ASK_PROMPT in sessions(cli, env, "show", sid).stdout
    hits = json.loads(sessions(cli, env, "search", "kernel", "--json").stdout)
    assert hits and all(h["session_id"] == sid for h in hits)

    jsonl = tmp_path / "s.jsonl"
    sessions(cli, env, "export", sid, "-o", jsonl)
    lines = [json.loads(x) for x in jsonl.read_text().splitlines()]
    assert lines and all(isinstance(x, dict) for x in lines)
    ipynb = tmp_path / "s.ipynb"
    sessions(cli, env, "export", sid, "--format", "ipynb", "-o", ipynb)
    nb = read_valid(ipynb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code[0].source == ASK_PROMPT
    assert any(c.source == "6 * 7" for c in code)

    sessions(cli, env, "rm", sid)
    assert json.loads(sessions(cli, env, "list", "--json").stdout) == []
    archived = json.loads(sessions(cli, env, "list", "--archived", "--json").stdout)
    assert [s["id"] for s in archived] == [sid] and archived[0]["archived"]
    sessions(cli, env, "restore", sid)
    assert [s["id"] for s in json.loads(sessions(cli, env, "list", "--json").stdout)] == [sid]

    # An existing session is not overwritten; after a purge it comes back.
    p = sessions(cli, env, "import", jsonl, ok=False)
    assert p.returncode != 0 and "already" in p.stderr, p.stderr
    sessions(cli, env, "rm", sid, "--purge")
    assert json.loads(sessions(cli, env, "list", "--all", "--json").stdout) == []
    imported = json.loads(sessions(cli, env, "import", jsonl, "--json").stdout)
    assert imported["id"] == sid and imported["messages"] == s["messages"]
    again = json.loads(sessions(cli, env, "show", sid, "--json").stdout)
    assert again["ui"] == shown["ui"] and again["api"] == shown["api"]

    # The continued session carries on from the imported history.
    p = agentkernel(cli, env, "ask", "Something new", "--continue", "--model", f"replay:{ASK_CASSETTE}",
                    "--output-format", "json")
    assert json.loads(p.stdout)["session_id"] == sid


BAD_NOTEBOOK = '{"cells": [{"cell_type": "code", "source": 7}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}'


def bad_cases(tmp_path):
    corrupt = tmp_path / "corrupt.ipynb"
    corrupt.write_text(BAD_NOTEBOOK)
    truncated = tmp_path / "truncated.ipynb"
    truncated.write_text(TOUR.read_text()[:300])
    diverging = tmp_path / "diverging.ipynb"
    nb = nbformat.read(str(TOUR), as_version=4)
    nb.cells[1].source = "Compute the first twenty Fibonacci numbers."
    nbformat.write(nb, str(diverging))
    exhausted = tmp_path / "exhausted.ipynb"
    nb = nbformat.read(str(TOUR), as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("One more question."))
    nbformat.write(nb, str(exhausted))
    return [
        ("corrupt notebook", [corrupt], "cell 0"),
        ("truncated notebook", [truncated], "notebooks: read"),
        ("unknown kernelspec", [TOUR, "--kernel", "no-such-kernel"], 'unknown kernelspec "no-such-kernel"'),
        ("missing cassette", [TOUR, "--replay", tmp_path / "missing.jsonl"], "open cassette"),
        ("diverging cassette", [diverging, "--replay", TOUR_CASSETTE], "diverged from the recording"),
        ("exhausted cassette", [exhausted, "--replay", TOUR_CASSETTE], "cassette holds 5 calls"),
    ]


def test_run_bad_input(cli, env, tmp_path):
    for name, args, message in bad_cases(tmp_path):
        out = tmp_path / "out" / (name.replace(" ", "-") + ".ipynb")
        out.parent.mkdir(exist_ok=True)
        p = agentkernel(cli, env, "run", *args, "-o", out)
        assert p.returncode != 0, name
        assert message in p.stderr, f"{name}: {p.stderr}"
        assert list(out.parent.iterdir()) == [], f"{name} left {list(out.parent.iterdir())}"


def test_unknown_session_id(cli, env, tmp_path):
    out = tmp_path / "x.jsonl"
    for args in (["show", "nope"], ["export", "nope", "-o", out], ["export", "nope", "--format", "ipynb", "-o", out],
                 ["rm", "nope"], ["restore", "nope"]):
        p = sessions(cli, env, *args, ok=False)
        assert p.returncode != 0, args
        assert 'no such session "nope"' in p.stderr, p.stderr
    p = agentkernel(cli, env, "ask", ASK_PROMPT, "--session", "nope", "--model", f"replay:{ASK_CASSETTE}")
    assert p.returncode != 0 and 'no such session "nope"' in p.stderr, p.stderr
    p = sessions(cli, env, "import", tmp_path / "missing.jsonl", ok=False)
    assert p.returncode != 0 and "no such file" in p.stderr
    assert not out.exists()
