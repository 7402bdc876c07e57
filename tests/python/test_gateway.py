"""Backing kernels on a Jupyter server (the gateway backing).

agentkernel is launched here, through jupyter_client, with
JUPYTER_GATEWAY_URL pointing at a real Notebook server (Debian's notebook 6,
which serves the kernels REST and WebSocket API that Kernel Gateway and
Enterprise Gateway serve). Its cells must run in a kernel of that server,
not in a child of agentkernel; interrupts must reach it; shutting
agentkernel down must delete it.
"""

import json
import os
import subprocess
import time

import pytest

from kclient import Kernel, descendants
from test_notebook_server import TOKEN, _api, notebook_server  # noqa: F401 (a fixture)


@pytest.fixture
def gateway_kernel(agentkernel_env, notebook_server, monkeypatch):  # noqa: F811
    """An agentkernel code-mode kernelspec whose backing runs on the server."""
    port = notebook_server
    env = agentkernel_env
    name = "agentkernel-test-gw"
    subprocess.run([str(env["binary"]), "install", "--prefix", str(env["prefix"]), "--name", name,
                    "--mode", "code", "--backing", "python3", "--gateway-url", f"http://127.0.0.1:{port}"],
                   check=True, capture_output=True, env=dict(os.environ, JUPYTER_GATEWAY_AUTH_TOKEN=TOKEN))
    monkeypatch.setenv("JUPYTER_GATEWAY_AUTH_TOKEN", TOKEN)
    return name, port


def test_cells_run_in_the_servers_kernel(gateway_kernel):
    name, port = gateway_kernel
    assert _api(port, "GET", "/api/kernels") == []
    with Kernel(name) as k:
        assert k.value("6 * 7") == "42"
        kernels = _api(port, "GET", "/api/kernels")
        assert len(kernels) == 1, kernels
        pid = int(k.value("import os; os.getpid()"))
        ours = k.km.provisioner.pid
        assert pid not in descendants(ours), "the backing kernel is agentkernel's child, not the server's"

        # An interrupt reaches the server's kernel.
        msg_id = k.execute("import time; time.sleep(30)")
        time.sleep(1)
        k.km.interrupt_kernel()
        reply = k.reply(msg_id, timeout=20)
        assert reply["content"]["status"] == "error" and reply["content"]["ename"] == "KeyboardInterrupt", reply
        assert k.value("'still here'", after_error=True) == "'still here'"
    # Shutting agentkernel down deletes its server kernel.
    deadline = time.time() + 10
    while _api(port, "GET", "/api/kernels") and time.time() < deadline:
        time.sleep(0.2)
    assert _api(port, "GET", "/api/kernels") == []


def test_bad_token_is_a_clear_error(gateway_kernel, monkeypatch):
    name, port = gateway_kernel
    monkeypatch.setenv("JUPYTER_GATEWAY_AUTH_TOKEN", "not-the-token-" + "x" * 8)
    with Kernel(name) as k:
        reply, msgs = k.run("1 + 1")
        assert reply["content"]["status"] == "error"
        err = [m["content"] for m in msgs if m["header"]["msg_type"] == "error"][0]
        text = err["ename"] + ": " + err["evalue"]
        assert f"http://127.0.0.1:{port}" in text and "refused" in text, text
        assert "not-the-token" not in text, "the token is shown"
    assert json.dumps(_api(port, "GET", "/api/kernels")) == "[]"
