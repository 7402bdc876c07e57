"""Jupyter Enterprise Gateway 3.3 (PyPI, a venv of its own: it needs
jupyter_server 1) launching agentkernel through its remote kernel launcher
contract: DistributedProcessProxy on 127.0.0.1 runs the kernelspec's
command with --kernel-id, --response-address, --public-key and --port-range,
and agentkernel answers with its encrypted connection info and listens on
its communication port — EG itself on the other side, not a stand-in. A
cell sent through EG's WebSocket runs; deleting the kernel through EG ends
agentkernel and its backing kernel.

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


def test_enterprise_gateway_launches_agentkernel(agentkernel_env, eg_python, tmp_path):
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
    env_path = os.pathsep.join([str(data), os.environ.get("JUPYTER_PATH", "")])
    saved = os.environ.get("JUPYTER_PATH")
    os.environ["JUPYTER_PATH"] = env_path
    try:
        eg = _start_eg(eg_python, tmp_path)
    finally:
        if saved is None:
            os.environ.pop("JUPYTER_PATH", None)
        else:
            os.environ["JUPYTER_PATH"] = saved
    try:
        assert "agentkernel-eg" in eg.api("GET", "/api/kernelspecs")["kernelspecs"]
        # EG starts no kernel for root unless told whose it is.
        kid = eg.api("POST", "/api/kernels", {"name": "agentkernel-eg", "env": {"KERNEL_USERNAME": "agent-tester"}})["id"]
        ours = [p for p in descendants(eg.proc.pid) if _exe(p) == binary]
        assert len(ours) == 1, f"EG runs {len(ours)} agentkernels"
        out = asyncio.run(_execute_over_websocket(eg.url, eg.token, kid, "6 * 7"))
        assert out == "42", out
        eg.api("DELETE", f"/api/kernels/{kid}")
        deadline = time.time() + 30
        while any(_exe(p) == binary for p in descendants(eg.proc.pid)) and time.time() < deadline:
            time.sleep(0.2)
        assert not [p for p in descendants(eg.proc.pid) if _exe(p) == binary], "agentkernel outlived its deletion"
    finally:
        eg.close()
        log = eg.log_path.read_text()
        assert "Traceback" not in log, log


def _start_eg(python, root):
    return Server(["-m", "enterprise_gateway", "--EnterpriseGatewayApp.ip=127.0.0.1", "--EnterpriseGatewayApp.port={port}",
                   "--EnterpriseGatewayApp.auth_token={token}", "--EnterpriseGatewayApp.list_kernels=True",
                   "--EnterpriseGatewayApp.remote_hosts=127.0.0.1"], root, python=python)


def _exe(pid):
    try:
        return os.readlink(f"/proc/{pid}/exe").removesuffix(" (deleted)")
    except OSError:
        return ""
