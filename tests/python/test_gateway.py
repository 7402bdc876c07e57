"""Backing kernels on a Jupyter server (the gateway backing).

agentkernel is launched here, through jupyter_client, with
JUPYTER_GATEWAY_URL pointing at a real Notebook server (Debian's notebook 6,
which serves the kernels REST and WebSocket API that Kernel Gateway and
Enterprise Gateway serve; conftest's ``jupyter_server``). Its cells must run
in a kernel of that server, not in a child of agentkernel; interrupts must
reach it; shutting agentkernel down must delete it. The protocol and prompt
suites run over this backing too (``backing``); these are its basics.
"""

import os
import signal
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


def _reapers():
    """Pids of running gateway reapers (agentkernel gateway-reaper)."""
    pids = set()
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if len(argv) > 1 and argv[1] == b"gateway-reaper":
                pids.add(int(d))
    return pids


# A killed agentkernel's server kernel is gone within this bound: the
# reaper's one DELETE on a server that answers (backing.ReapWindow bounds
# its retries when the server does not).
REAP_BOUND = 5.0


def test_killed_agentkernel_leaves_no_server_kernel(gateway):
    """jupyter_client's forced shutdown (SIGKILL to the kernel's process group),
    as the OOM killer does: the server kernel does not outlive agentkernel."""
    server = gateway.server
    before = server.kernels()
    k = Kernel(KERNEL_GW)
    kids = set()
    try:
        assert k.value("6 * 7") == "42"
        kids = server.kernels() - before
        assert len(kids) == 1, kids
        pid = k.km.provisioner.pid
        os.killpg(os.getpgid(pid), signal.SIGKILL)
        left = server.wait_gone(kids, timeout=REAP_BOUND)
        assert not left, f"kernel {left} outlived the killed agentkernel by more than {REAP_BOUND} s"
        deadline = time.monotonic() + REAP_BOUND
        while _reapers() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _reapers(), "the reaper lingers after its work"
    finally:
        k.kc.stop_channels()
        if k.km.has_kernel:
            k.km.shutdown_kernel(now=True)
        for kid in server.kernels() & kids:  # a failed run leaves the server clean
            server.api("DELETE", f"/api/kernels/{kid}")


def test_clean_shutdown_leaves_no_reaper(gateway):
    """A shutdown deletes the kernel itself; its reaper exits with it."""
    server = gateway.server
    before = server.kernels()
    with Kernel(KERNEL_GW) as k:
        assert k.value("1 + 1") == "2"
        assert _reapers(), "no reaper watches the server kernel"
    assert not server.wait_gone(server.kernels() - before)
    deadline = time.monotonic() + REAP_BOUND
    while _reapers() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _reapers(), "the reaper outlives a clean shutdown"
