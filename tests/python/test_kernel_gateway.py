"""Jupyter Kernel Gateway 3 (PyPI), both ways:

* agentkernel's backing kernel on a Kernel Gateway (JUPYTER_GATEWAY_URL at
  it): cells run in the gateway's kernel, which goes when agentkernel does;
* agentkernel itself as a kernel on a Kernel Gateway, reached through
  Jupyter Server 2's own gateway client (--GatewayClient.url), as a
  JupyterHub or a remote Jupyter deployment runs kernels.

Only on the PyPI stack (scripts/modern-venv.sh), where both are installed.
"""

import asyncio
import json
import os
import shutil
import subprocess
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

from conftest import KERNEL, _install, free_port
from kclient import Kernel
from stack import MODERN, PYTHON

pytestmark = pytest.mark.skipif(not MODERN, reason="Kernel Gateway 3 is on the PyPI stack")


class Server:
    """A Jupyter server process (Kernel Gateway or Jupyter Server) with a token on 127.0.0.1."""

    def __init__(self, args, root, token=None, python=PYTHON):
        self.token = token or uuid.uuid4().hex
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = root / f"server-{self.port}.log"
        self._log = open(self.log_path, "w")
        cmd = [python, *[a.format(port=self.port, token=self.token, root=root) for a in args]]
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True, cwd=root)
        deadline = time.time() + 60
        while True:
            try:
                self.api("GET", "/api/kernelspecs")
                return
            except OSError:
                if self.proc.poll() is not None or time.time() > deadline:
                    self.close()
                    raise RuntimeError(f"{cmd} did not start:\n" + self.log_path.read_text())
                time.sleep(0.2)

    def api(self, method, path, body=None):
        req = urllib.request.Request(self.url + path, method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as r:
            data = r.read()
            return json.loads(data) if data else None

    def kernels(self):
        return {k["id"]: k["name"] for k in self.api("GET", "/api/kernels")}

    def close(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, 15)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
                self.proc.wait()
        self._log.close()


@pytest.fixture
def kernel_gateway(agentkernel_env, tmp_path):
    kg = Server(["-m", "kernel_gateway", "--KernelGatewayApp.ip=127.0.0.1", "--KernelGatewayApp.port={port}",
                 "--KernelGatewayApp.auth_token={token}", "--JupyterWebsocketPersonality.list_kernels=True"], tmp_path)
    try:
        yield kg
        deadline = time.time() + 10
        while kg.kernels() and time.time() < deadline:
            time.sleep(0.2)
        assert not kg.kernels(), f"kernels left on the gateway: {kg.kernels()}"
    finally:
        kg.close()


def test_backing_kernel_on_kernel_gateway(agentkernel_env, kernel_gateway, monkeypatch):
    """agentkernel (code mode) with its backing kernel on Kernel Gateway."""
    name = "agentkernel-test-kg"
    monkeypatch.setenv("JUPYTER_GATEWAY_AUTH_TOKEN", kernel_gateway.token)
    _install(agentkernel_env["binary"], agentkernel_env["prefix"], name, "Agent (test, kernel gateway)",
             ["--gateway-url", kernel_gateway.url])
    with Kernel(name) as k:
        assert k.value("import os; os.getpid() != %d and 6 * 7" % k.km.provisioner.pid) == "42"
        running = kernel_gateway.kernels()
        assert list(running.values()) == ["python3"], running
    # agentkernel's shutdown deleted its gateway kernel (the fixture checks none is left).


async def _execute_over_websocket(base, token, kernel_id, code):
    """Run code on a server's kernel through its WebSocket, as a browser does;
    return the execute_result's text/plain."""
    from tornado.websocket import websocket_connect

    ws = await websocket_connect(f"{base.replace('http', 'ws')}/api/kernels/{kernel_id}/channels?token={token}")
    msg_id, session = uuid.uuid4().hex, uuid.uuid4().hex
    ws.write_message(json.dumps({
        "header": {"msg_id": msg_id, "msg_type": "execute_request", "session": session, "username": "test",
                   "version": "5.3", "date": ""},
        "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
        "content": {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                    "allow_stdin": False, "stop_on_error": True}}))
    result = None
    deadline = time.time() + 120
    while time.time() < deadline:
        raw = await asyncio.wait_for(ws.read_message(), timeout=120)
        if raw is None:
            raise AssertionError("the server closed the kernel's socket")
        m = json.loads(raw)
        if m.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        t = m["header"]["msg_type"]
        if t == "execute_result":
            result = m["content"]["data"]["text/plain"]
        if t == "error":
            raise AssertionError(m["content"])
        if t == "status" and m["content"]["execution_state"] == "idle" and result is not None:
            break
    ws.close()
    return result


def test_agentkernel_on_kernel_gateway_through_jupyter_server(agentkernel_env, kernel_gateway, tmp_path):
    """Jupyter Server 2's gateway client starts agentkernel on Kernel Gateway;
    a cell sent through Jupyter Server's WebSocket runs there."""
    js = Server(["-m", "jupyter_server", "--no-browser", "--ip=127.0.0.1", "--port={port}",
                 "--IdentityProvider.token={token}", "--ServerApp.root_dir={root}",
                 f"--GatewayClient.url={kernel_gateway.url}", f"--GatewayClient.auth_token={kernel_gateway.token}",
                 *(["--allow-root"] if os.geteuid() == 0 else [])], tmp_path)
    try:
        specs = js.api("GET", "/api/kernelspecs")["kernelspecs"]
        assert KERNEL in specs, sorted(specs)  # the gateway's kernelspecs, seen through Jupyter Server
        kid = js.api("POST", "/api/kernels", {"name": KERNEL})["id"]
        assert kid in kernel_gateway.kernels() and kernel_gateway.kernels()[kid] == KERNEL
        out = asyncio.run(_execute_over_websocket(js.url, js.token, kid, "6 * 7"))
        assert out == "42", out
        js.api("DELETE", f"/api/kernels/{kid}")
    finally:
        js.close()


async def _run_cell_over_websocket(base, token, kernel_id, code):
    """Run a cell on a server's kernel through its WebSocket; return the
    execute_reply's status and every text the cell showed."""
    from tornado.websocket import websocket_connect

    ws = await websocket_connect(f"{base.replace('http', 'ws')}/api/kernels/{kernel_id}/channels?token={token}")
    msg_id, session = uuid.uuid4().hex, uuid.uuid4().hex
    ws.write_message(json.dumps({
        "header": {"msg_id": msg_id, "msg_type": "execute_request", "session": session, "username": "test",
                   "version": "5.3", "date": ""},
        "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
        "content": {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                    "allow_stdin": False, "stop_on_error": True}}))
    texts, status, idle = [], None, False
    deadline = time.time() + 120
    while time.time() < deadline and not (status and idle):
        raw = await asyncio.wait_for(ws.read_message(), timeout=120)
        if raw is None:
            raise AssertionError("the server closed the kernel's socket")
        m = json.loads(raw)
        if m.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        t, c = m["header"]["msg_type"], m["content"]
        if t == "stream":
            texts.append(c["text"])
        elif t in ("display_data", "update_display_data", "execute_result"):
            texts.append(c["data"].get("text/markdown") or c["data"].get("text/plain", ""))
        elif t == "error":
            texts.append(f"{c['ename']}: {c['evalue']}")
        elif t == "execute_reply":
            status = c["status"]
        elif t == "status" and c["execution_state"] == "idle":
            idle = True
    ws.close()
    return status, "\n".join(texts)


def test_prompt_kernel_on_kernel_gateway_without_home(agentkernel_env, model, tmp_path, monkeypatch):
    """Kernel Gateway passes the kernels that Jupyter Server starts there only
    PATH, KERNEL_* and what KG_ENV_PROCESS_WHITELIST names: no $HOME, no $JUPYTER_PATH, no
    $AGENTKERNEL_DATA_DIR. A prompt kernel there opens its store in the
    account's home, and finds its backing kernelspec, installed outside the
    system directories, in the directory install recorded."""
    specs = tmp_path / "specs" / "share" / "jupyter"
    backing_dir = specs / "kernels" / "py-kg-nohome"
    backing_dir.mkdir(parents=True)
    (backing_dir / "kernel.json").write_text(json.dumps({
        "argv": [PYTHON, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python (outside the system dirs)", "language": "python"}))
    name = "agentkernel-test-kg-nohome"
    env = {**os.environ, "JUPYTER_PATH": os.pathsep.join([str(specs), os.environ["JUPYTER_PATH"]])}
    proc = subprocess.run([str(agentkernel_env["binary"]), "install", "--prefix", str(agentkernel_env["prefix"]),
                           "--name", name, "--mode", "prompt", "--backing", "py-kg-nohome", "--model", "openai:gpt-4.1",
                           "--approve", "all", "--probe=false"], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    argv = json.loads((agentkernel_env["prefix"] / "share/jupyter/kernels" / name / "kernel.json").read_text())["argv"]
    assert argv[-2:] == ["--backing-dir", str(backing_dir)], argv

    # Where the kernel's store will be: the account's home, not $HOME.
    import pwd
    data = Path(pwd.getpwuid(os.getuid()).pw_dir) / ".local" / "share" / "agentkernel"
    existed = data.exists()
    monkeypatch.setenv("KG_ENV_PROCESS_WHITELIST", "OPENAI_BASE_URL,OPENAI_API_KEY")
    monkeypatch.setenv("HOME", str(tmp_path / "home-the-kernel-never-sees"))
    kg = Server(["-m", "kernel_gateway", "--KernelGatewayApp.ip=127.0.0.1", "--KernelGatewayApp.port={port}",
                 "--KernelGatewayApp.auth_token={token}"], tmp_path)
    kid = None
    try:
        # With an env in the request, as Jupyter Server's gateway client sends
        # (KERNEL_USERNAME…), the gateway gives the kernel no other variable.
        kid = kg.api("POST", "/api/kernels", {"name": name, "env": {"KERNEL_USERNAME": "test"}})["id"]
        model.enqueue(
            {"steps": [{"text": ["Checking in the kernel."]},
                       {"toolCall": {"id": "c1", "name": "execute_code",
                                     "args": [json.dumps({"code": "import os\nprint(6 * 7, os.environ.get('HOME'))"})]}}]},
            {"steps": [{"text": ["It is 42."]}]})
        status, shown = asyncio.run(_run_cell_over_websocket(kg.url, kg.token, kid, "What is 6 times 7? Check it."))
        assert status == "ok", shown
        assert "42 None" in shown and "It is 42." in shown, shown
        kg.api("DELETE", f"/api/kernels/{kid}")
        kid = None
    finally:
        if kid:
            kg.api("DELETE", f"/api/kernels/{kid}")
        kg.close()
        # The session went to the account's store: take it out again.
        if not existed:
            shutil.rmtree(data, ignore_errors=True)
        else:
            listing = subprocess.run([str(agentkernel_env["binary"]), "sessions", "list", "--dir", str(tmp_path), "--json"],
                                     env={**os.environ, "AGENTKERNEL_DATA_DIR": str(data)}, capture_output=True, text=True)
            for s in json.loads(listing.stdout or "[]"):
                subprocess.run([str(agentkernel_env["binary"]), "sessions", "rm", s["id"], "--purge"],
                               env={**os.environ, "AGENTKERNEL_DATA_DIR": str(data)}, capture_output=True)
