"""Jupyter Enterprise Gateway 3.3 (PyPI, a venv of its own: it needs
jupyter_server 1), both ways:

* launching agentkernel through its remote kernel launcher contract:
  DistributedProcessProxy on 127.0.0.1 runs the kernelspec's command with
  --kernel-id, --response-address, --public-key and --port-range, and
  agentkernel answers with its encrypted connection info and listens on its
  communication port — EG itself on the other side, not a stand-in. A cell
  runs through EG's WebSocket and through Jupyter Server 2's own gateway
  client pointed at EG; deleting the kernel through EG ends agentkernel;
* agentkernel's backing kernel on EG (the gateway backing).

Only on the PyPI stack's run (the EG venv is made by scripts/modern-venv.sh eg).
"""

import asyncio
import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from kclient import descendants
from stack import MODERN
from test_kernel_gateway import Server, _execute_over_websocket

pytestmark = pytest.mark.skipif(not MODERN, reason="run with the PyPI stack")
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def eg_python():
    proc = subprocess.run([str(REPO / "scripts" / "modern-venv.sh"), "eg"], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


@pytest.fixture
def eg(agentkernel_env, eg_python, tmp_path):
    """EG on 127.0.0.1 with the kernelspec agentkernel-eg (agentkernel, code
    mode, launched through DistributedProcessProxy) beside the usual ones."""
    binary = str(agentkernel_env["binary"])
    data = tmp_path / "eg-data"
    spec = data / "kernels" / "agentkernel-eg"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "display_name": "Agent (code, Enterprise Gateway)", "language": "python",
        "metadata": {"process_proxy": {
            "class_name": "enterprise_gateway.services.processproxies.distributed.DistributedProcessProxy"}},
        "argv": [binary, "kernel", "--kernel-id", "{kernel_id}", "--port-range", "{port_range}",
                 "--response-address", "{response_address}", "--public-key", "{public_key}",
                 "--backing", "python3", "--mode", "code"],
    }))
    # EG's venv has no ipykernel: its python3 is Debian's.
    py3 = data / "kernels" / "python3"
    py3.mkdir(parents=True)
    (py3 / "kernel.json").write_text(json.dumps({
        "display_name": "Python 3 (Debian's ipykernel)", "language": "python",
        "argv": ["/usr/bin/python3", "-m", "ipykernel_launcher", "-f", "{connection_file}"]}))
    saved = os.environ.get("JUPYTER_PATH")
    os.environ["JUPYTER_PATH"] = os.pathsep.join([str(data), saved or ""])
    try:
        server = _start_eg(eg_python, tmp_path)
    finally:
        if saved is None:
            os.environ.pop("JUPYTER_PATH", None)
        else:
            os.environ["JUPYTER_PATH"] = saved
    try:
        yield server
    finally:
        server.close()
        log = server.log_path.read_text()
        assert "Traceback" not in log, log


# Whose kernel it is, as a JupyterHub user's would say.
OWNER = {"KERNEL_USERNAME": "agent-tester"}


def test_jupyter_server_runs_agentkernel_on_enterprise_gateway(agentkernel_env, eg, tmp_path):
    """Jupyter Server 2's gateway client pointed at EG: the kernel EG launches
    is agentkernel, through its launcher contract."""
    js = Server(["-m", "jupyter_server", "--no-browser", "--ip=127.0.0.1", "--port={port}",
                 "--IdentityProvider.token={token}", "--ServerApp.root_dir={root}",
                 f"--GatewayClient.url={eg.url}", f"--GatewayClient.auth_token={eg.token}",
                 *(["--allow-root"] if os.geteuid() == 0 else [])], tmp_path)
    try:
        kid = js.api("POST", "/api/kernels", {"name": "agentkernel-eg", "env": OWNER})["id"]
        binary = str(agentkernel_env["binary"])
        assert [p for p in descendants(eg.proc.pid) if _exe(p) == binary], "EG runs no agentkernel"
        out = asyncio.run(_execute_over_websocket(js.url, js.token, kid, "6 * 7"))
        assert out == "42", out
        js.api("DELETE", f"/api/kernels/{kid}")
    finally:
        js.close()


def test_backing_kernel_on_enterprise_gateway(agentkernel_env, eg, monkeypatch):
    """agentkernel (code mode) with its backing kernel on EG."""
    from conftest import _install
    from kclient import Kernel

    name = "agentkernel-test-eg"
    monkeypatch.setenv("JUPYTER_GATEWAY_AUTH_TOKEN", eg.token)
    _install(agentkernel_env["binary"], agentkernel_env["prefix"], name, "Agent (test, enterprise gateway)",
             ["--gateway-url", eg.url])
    with Kernel(name) as k:
        assert k.value("6 * 7") == "42"
        assert list(eg.kernels().values()) == ["python3"], eg.kernels()
    deadline = time.time() + 10
    while eg.kernels() and time.time() < deadline:
        time.sleep(0.2)
    assert not eg.kernels(), eg.kernels()


def test_enterprise_gateway_launches_agentkernel(agentkernel_env, eg):
    """EG's REST and WebSocket API directly: its launch, a cell, its deletion."""
    binary = str(agentkernel_env["binary"])
    assert "agentkernel-eg" in eg.api("GET", "/api/kernelspecs")["kernelspecs"]
    kid = eg.api("POST", "/api/kernels", {"name": "agentkernel-eg", "env": OWNER})["id"]
    ours = [p for p in descendants(eg.proc.pid) if _exe(p) == binary]
    assert len(ours) == 1, f"EG runs {len(ours)} agentkernels"
    out = asyncio.run(_execute_over_websocket(eg.url, eg.token, kid, "6 * 7"))
    assert out == "42", out
    eg.api("DELETE", f"/api/kernels/{kid}")
    deadline = time.time() + 30
    while any(_exe(p) == binary for p in descendants(eg.proc.pid)) and time.time() < deadline:
        time.sleep(0.2)
    assert not [p for p in descendants(eg.proc.pid) if _exe(p) == binary], "agentkernel outlived its deletion"


def _start_eg(python, root):
    return Server(["-m", "enterprise_gateway", "--EnterpriseGatewayApp.ip=127.0.0.1", "--EnterpriseGatewayApp.port={port}",
                   "--EnterpriseGatewayApp.auth_token={token}", "--EnterpriseGatewayApp.list_kernels=True",
                   "--EnterpriseGatewayApp.remote_hosts=127.0.0.1",
                   # The tests may run as root, whom EG refuses by default.
                   "--EnterpriseGatewayApp.unauthorized_users=nobody"], root, python=python)


def _exe(pid):
    try:
        return os.readlink(f"/proc/{pid}/exe").removesuffix(" (deleted)")
    except OSError:
        return ""
