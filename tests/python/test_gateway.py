"""Backing kernels on a Jupyter server (the gateway backing).

agentkernel is launched here, through jupyter_client, with
JUPYTER_GATEWAY_URL pointing at a real Notebook server (Debian's notebook 6,
which serves the kernels REST and WebSocket API that Kernel Gateway and
Enterprise Gateway serve; conftest's ``jupyter_server``). Its cells must run
in a kernel of that server, not in a child of agentkernel; interrupts must
reach it; shutting agentkernel down must delete it. The protocol and prompt
suites run over this backing too (``backing``); these are its basics.
"""

import time

from conftest import KERNEL_GW, WHERE
from kclient import Kernel


def test_cells_run_in_the_servers_kernel(gateway):
    server = gateway.server
    before = server.kernels()
    with Kernel(KERNEL_GW) as k:
        assert k.value("6 * 7") == "42"
        reply, msgs = k.run(WHERE)
        assert reply["content"]["status"] == "ok"
        _, kid = gateway.check_where_code_runs(k.km.provisioner.pid, k.stdout(msgs))
        assert server.kernels() - before == {kid}

        # An interrupt reaches the server's kernel.
        msg_id = k.execute("import time; time.sleep(30)")
        time.sleep(1)
        k.km.interrupt_kernel()
        reply = k.reply(msg_id, timeout=20)
        assert reply["content"]["status"] == "error" and reply["content"]["ename"] == "KeyboardInterrupt", reply
        assert k.value("'still here'", after_error=True) == "'still here'"
    # Shutting agentkernel down deletes its server kernel.
    assert not server.wait_gone({kid})


def test_bad_token_is_a_clear_error(gateway, monkeypatch):
    server = gateway.server
    before = server.kernels()
    monkeypatch.setenv("JUPYTER_GATEWAY_AUTH_TOKEN", "not-the-token-" + "x" * 8)
    with Kernel(KERNEL_GW) as k:
        reply, msgs = k.run("1 + 1")
        assert reply["content"]["status"] == "error"
        err = [m["content"] for m in msgs if m["header"]["msg_type"] == "error"][0]
        text = err["ename"] + ": " + err["evalue"]
        assert server.url in text and "refused" in text, text
        assert "not-the-token" not in text, "the token is shown"
    assert server.kernels() == before
