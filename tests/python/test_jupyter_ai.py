"""agentkernel as a Jupyter AI 3 persona, in a real Jupyter server with
Jupyter AI 3.2 and jupyter-ai-acp-client from PyPI (a venv of their own:
scripts/modern-venv.sh jupyterai) and this checkout's wheel installed by pip
beside them, the model scripted.

The chat is driven as JupyterLab drives it without collaboration: a
WebSocket on /api/chat/ws/PATH (jupyterlab_chat's transport) for the
messages, and /api/events/subscribe for the personas Jupyter AI publishes.
Jupyter AI's ACP client starts `agentkernel acp` itself and gives it the
chat's directory, its Jupyter MCP server and the client's fs.

Only on the PyPI stack's run: the Jupyter AI venv is the same in both.
"""

import asyncio
import json
import os
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

import pytest

from conftest import free_port
from stack import MODERN

pytestmark = pytest.mark.skipif(not MODERN, reason="run with the PyPI stack")
REPO = Path(__file__).resolve().parents[2]
PERSONA = "jupyter-ai-personas::agentkernel::AgentKernelPersona"
TIMEOUT = 90


def text(*pieces):
    return {"steps": [{"text": list(pieces)}, {"usage": {"input": 20, "output": 5}}]}


def tool(call_id, name, args, say):
    return {"steps": [{"text": [say]}, {"toolCall": {"id": call_id, "name": name, "args": [json.dumps(args)]}}]}


@pytest.fixture(scope="module")
def jupyterai_python():
    proc = subprocess.run([str(REPO / "scripts" / "modern-venv.sh"), "jupyterai"], capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def overlay(base_python, wheel, venv):
    """A venv over base_python's (its site-packages on the path) with the
    wheel pip-installed into it: the base venv, a cached one, stays as it
    was. Returns its python."""
    subprocess.run([base_python, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    py = str(venv / "bin" / "python")

    def purelib(python):
        return subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                              capture_output=True, text=True, check=True).stdout.strip()

    Path(purelib(py), "base.pth").write_text(purelib(base_python) + "\n")
    proc = subprocess.run([py, "-m", "pip", "install", "-q", "--no-index", "--no-deps", str(wheel)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return py


@pytest.fixture(scope="module")
def lab(jupyterai_python, wheel, tmp_path_factory):
    """The wheel over the Jupyter AI venv, whose Jupyter config and data the
    server finds through JUPYTER_CONFIG_PATH and JUPYTER_PATH."""
    venv = tmp_path_factory.mktemp("jupyterai") / "venv"
    py = overlay(jupyterai_python, wheel, venv)
    return {"python": py, "venv": venv, "base": Path(jupyterai_python).parent.parent,
            "binary": venv / "bin" / "agentkernel"}


def test_without_the_acp_client(lab):
    """Jupyter AI's persona manager without jupyter-ai-acp-client: loading the
    persona says what it needs (PersonaRequirementsUnmet, which Jupyter AI
    logs and passes over) instead of failing the chat."""
    probe = ("import sys; sys.modules['jupyter_ai_acp_client'] = None\n"
             "from importlib.metadata import entry_points\n"
             "from jupyter_ai_persona_manager import PersonaRequirementsUnmet\n"
             "ep = [e for e in entry_points(group='jupyter_ai.personas') if e.name == 'agentkernel'][0]\n"
             "try:\n    ep.load()\nexcept PersonaRequirementsUnmet as e:\n    print('unmet:', e)\n")
    out = subprocess.run([lab["python"], "-c", probe], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.startswith("unmet:") and "jupyter-ai-acp-client" in out.stdout, out


def test_plain_jupyterlab(wheel, tmp_path):
    """JupyterLab 4 without Jupyter AI (the PyPI stack's venv) with the wheel
    beside it: it serves, and lists the wheel's extension."""
    py = overlay(sys.executable, wheel, tmp_path / "venv")
    token, port = uuid.uuid4().hex, free_port()
    cmd = [py, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
           f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={tmp_path}"]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    log = tmp_path / "lab.log"
    with open(log, "w") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    try:
        deadline = time.time() + 120
        while True:
            try:
                req = urllib.request.Request(f"http://127.0.0.1:{port}/lab",
                                             headers={"Authorization": f"token {token}"})
                page = urllib.request.urlopen(req, timeout=30).read().decode()
                break
            except OSError:
                assert proc.poll() is None and time.time() < deadline, log.read_text()
                time.sleep(0.2)
        assert "@agentkernel/jupyterlab" in page, page[:2000]
        assert "Traceback" not in log.read_text(), log.read_text()
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=30)


class Server:
    """Jupyter Server with Jupyter AI's extensions on 127.0.0.1, its root a
    temporary directory; agentkernel's model from the environment."""

    def __init__(self, lab, root, log_path):
        self.token = uuid.uuid4().hex
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        env = {**os.environ,
               "AGENTKERNEL_MODEL": "openai:gpt-4.1",
               "JUPYTER_CONFIG_PATH": str(lab["base"] / "etc" / "jupyter"),
               "JUPYTER_PATH": os.pathsep.join([str(lab["base"] / "share" / "jupyter"), os.environ.get("JUPYTER_PATH", "")])}
        cmd = [lab["python"], "-m", "jupyter_server", "--no-browser", "--ip=127.0.0.1", f"--port={self.port}",
               f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={root}",
               f"--MCPExtensionApp.mcp_port={free_port()}"]  # the Jupyter MCP server, 3001 by default
        if os.geteuid() == 0:
            cmd.append("--allow-root")
        self._log = open(log_path, "a")
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     env=env, start_new_session=True)
        deadline = time.time() + 120
        while True:
            try:
                self.api("GET", "/api")
                break
            except OSError:
                if self.proc.poll() is not None or time.time() > deadline:
                    self.close()
                    raise RuntimeError("the Jupyter server did not start:\n" + log_path.read_text())
                time.sleep(0.2)

    def api(self, method, path, body=None):
        req = urllib.request.Request(self.url + path, method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": f"token {self.token}",
                                              "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            data = r.read()
            return r, data

    def close(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, 15)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
                self.proc.wait()
        self._log.close()


class Chat:
    """One web client of a chat: its WebSocket and the server's events."""

    def __init__(self, server, path):
        self.server, self.path = server, path
        self.messages = {}  # id -> latest version
        self.order = []  # ids as they came
        self.events = []
        self.metadata = {}

    async def __aenter__(self):
        from tornado.httpclient import HTTPRequest
        from tornado.websocket import websocket_connect

        def req(path):
            return HTTPRequest(f"ws://127.0.0.1:{self.server.port}{path}",
                               headers={"Authorization": f"token {self.server.token}"})

        self.ev = await websocket_connect(req("/api/events/subscribe"))
        self.ws = await websocket_connect(req("/api/chat/ws/" + urllib.parse.quote(self.path)))
        first = json.loads(await self.ws.read_message())
        assert first["action"] == "connection", first
        self.id = first["id"]
        for m in first["messages"]:
            self._message(m)
        self._tasks = [asyncio.ensure_future(self._read(self.ws, self._frame)),
                       asyncio.ensure_future(self._read(self.ev, self.events.append))]
        return self

    async def __aexit__(self, *exc):
        self.ws.close()
        self.ev.close()
        for t in self._tasks:
            t.cancel()

    async def _read(self, ws, handle):
        while True:
            m = await ws.read_message()
            if m is None:
                return
            handle(json.loads(m))

    def _message(self, m):
        if m["id"] not in self.messages:
            self.order.append(m["id"])
        self.messages[m["id"]] = m

    def _frame(self, f):
        if f.get("action") == "message":
            self._message(f["message"])
        elif f.get("action") == "metadata":
            self.metadata.update(f["metadata"])

    async def until(self, what, fn, timeout=TIMEOUT):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            got = fn()
            if got:
                return got
            await asyncio.sleep(0.05)
        raise AssertionError(f"timed out waiting for {what}; messages: {self.texts()}; "
                             f"log:\n{self.server.log_path.read_text()[-3000:]}")

    def personas(self):
        """The personas Jupyter AI published for this chat (id -> name)."""
        for e in reversed(self.events):
            if e.get("schema_id", "").endswith("/personas/v1") and e.get("chat_id") == self.id:
                return {p["id"]: p["name"] for p in e["personas"]}
        return None

    async def send(self, body):
        n = len(self.events)
        await self.ws.write_message(json.dumps({"type": "client", "action": "send", "id": str(uuid.uuid4()),
                                                "body": body, "metadata": {"to_persona": PERSONA}}))
        return n

    def done_since(self, n):
        """Whether the persona started and finished processing after event n."""
        states = [e.get("processing") for e in self.events[n:]
                  if e.get("persona_id") == PERSONA and "processing" in e]
        return True in states and states[-1] is False

    def persona_messages(self):
        return [self.messages[i] for i in self.order if self.messages[i]["sender"] == PERSONA]

    def texts(self):
        return [(self.messages[i]["sender"][-20:], self.messages[i].get("body", "")) for i in self.order]


def test_persona_in_jupyter_ai(lab, model, tmp_path):
    """Jupyter AI lists "Agent Kernel" in a chat; a message to it is answered
    by `agentkernel acp` with the scripted model, which is offered the
    Jupyter MCP server's tools; code it runs asks first, and the chat's
    Allow (Jupyter AI's REST call) lets it run in a kernel in the chat's
    directory. After a restart of the server the chat's session is loaded
    (session/load): the model is sent the earlier turns, and the chat shows
    no copy of the earlier answers."""
    root = tmp_path / "root"
    (root / "work").mkdir(parents=True)
    log = tmp_path / "server.log"
    chat_path = "work/analysis.chat"

    async def first_server(server):
        async with Chat(server, chat_path) as chat:
            names = await chat.until("the chat's personas", chat.personas)
            assert names.get(PERSONA) == "Agent Kernel", names
            r, svg = server.api("GET", "/api/ai/avatars/" + urllib.parse.quote(PERSONA, safe=""))
            assert b"<svg" in svg, svg[:100]

            model.enqueue(text("Hello ", "from agentkernel."))
            n = await chat.send("Say hello")
            await chat.until("the answer", lambda: chat.done_since(n) and any(
                m.get("body") == "Hello from agentkernel." for m in chat.persona_messages()))
            sid = chat.metadata.get("acp_session_ids", {}).get(PERSONA)
            assert sid, chat.metadata

            code = "import os; print(os.getcwd(), 6 * 7)"
            model.enqueue(tool("c1", "execute_code", {"code": code}, "Running it."), text("It printed 42."))
            n = await chat.send("Compute 6*7 in Python")

            def pending():
                for m in chat.persona_messages():
                    for tc in (m.get("metadata") or {}).get("tool_calls", []):
                        if tc.get("permission_status") == "pending":
                            return tc
            tc = await chat.until("the permission request", pending)
            assert tc["raw_input"] == {"code": code} and tc["session_id"] == sid, tc
            assert {o["option_id"] for o in tc["permission_options"]} >= {"allow", "reject"}, tc
            server.api("POST", "/ai/acp/permissions",
                       {"session_id": sid, "tool_call_id": tc["tool_call_id"], "option_id": "allow"})
            await chat.until("the end of the turn", lambda: chat.done_since(n) and any(
                m.get("body") == "It printed 42." for m in chat.persona_messages()))
            done = [tc for m in chat.persona_messages() for tc in (m.get("metadata") or {}).get("tool_calls", [])
                    if tc["tool_call_id"] == "c1"]
            assert done and done[-1]["status"] == "completed", done
            assert f"{root / 'work'} 42" in done[-1].get("raw_output", ""), done  # in the chat's directory
            return sid, len(chat.persona_messages())

    server = Server(lab, root, log)
    try:
        sid, answers = asyncio.run(first_server(server))
    finally:
        server.close()

    requests = model.requests()
    tools = [t["function"]["name"] for t in requests[0]["body"]["tools"]]
    assert "execute_code" in tools and "mcp__Jupyter_MCP_Server__read_notebook" in tools, tools
    sessions = subprocess.run([str(lab["binary"]), "sessions", "list", "--all", "--json"], capture_output=True,
                              text=True, timeout=60)
    assert sessions.returncode == 0 and sid in sessions.stdout, sessions

    async def second_server(server):
        async with Chat(server, chat_path) as chat:
            assert len(chat.persona_messages()) == answers, chat.texts()  # the chat file's
            model.enqueue(text("Still here."))
            n = await chat.send("Are you still there?")
            await chat.until("the answer after the restart", lambda: chat.done_since(n) and any(
                m.get("body") == "Still here." for m in chat.persona_messages()))
            await asyncio.sleep(1)  # late updates of the load would come by now
            assert chat.metadata.get("acp_session_ids", {}).get(PERSONA, sid) == sid, chat.metadata
            new = chat.persona_messages()[answers:]
            assert [m.get("body") for m in new if m.get("body")] == ["Still here."], chat.texts()

    server = Server(lab, root, log)
    try:
        asyncio.run(second_server(server))
    finally:
        server.close()
    sent = json.dumps(model.requests()[-1]["body"]["messages"])
    assert "Say hello" in sent and "It printed 42." in sent and "Are you still there?" in sent, sent
