"""Protocol 5.5 and the debugger, through code mode.

The debugger round trip runs against agentkernel (code mode over Debian's
ipykernel, whose debugger is python3-debugpy) and against that ipykernel
directly: the reference run proves the sequence is right for the kernel being
proxied. The 5.5 additions (iopub_welcome, supported_features, the kernelspec's
kernel_protocol_version) are ours: Debian's ipykernel 6.17 speaks 5.3.
"""

import json
import os
import time

import pytest

import zmq
from jupyter_client import KernelManager
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.session import Session

from conftest import KERNEL
from kclient import Kernel, sequence
from stack import MODERN

TIMEOUT = 30


@pytest.fixture(scope="module", params=[KERNEL, "python3"])
def dkernel(request):
    with Kernel(request.param) as k:
        yield k


def debug(k, command, arguments=None):
    msg_id = k.send("debug_request", {"type": "request", "seq": int(time.time() * 1000) % 100000,
                                      "command": command, "arguments": arguments or {}}, channel="control")
    reply = k.reply(msg_id, channel="control", timeout=TIMEOUT)
    assert reply["header"]["msg_type"] == "debug_reply", reply
    return reply["content"]


def wait_event(k, event, timeout=TIMEOUT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for msgs in k.iopub.values():
            for m in msgs:
                if m["header"]["msg_type"] == "debug_event" and m["content"].get("event") == event:
                    msgs.remove(m)
                    return m["content"]
        k._pump("iopub", 0.2)
    raise AssertionError(f"{k.name}: no debug_event {event!r}; iopub: "
                         + sequence([m for ms in k.iopub.values() for m in ms]))


def spec_json(name):
    spec = KernelSpecManager().get_kernel_spec(name)
    with open(os.path.join(spec.resource_dir, "kernel.json")) as f:
        return json.load(f)


def test_debugger_is_advertised(dkernel):
    """Where JupyterLab looks: the kernelspec's metadata (before the kernel
    starts) and kernel_info. Debian's ipykernel 6.17 says so in its kernelspec
    only; we say it in both, and in 5.5's supported_features."""
    assert spec_json(dkernel.name)["metadata"]["debugger"] is True
    msg_id = dkernel.send("kernel_info_request")
    c = dkernel.reply(msg_id)["content"]
    if dkernel.name == KERNEL:
        assert c["debugger"] is True, c
        assert c["protocol_version"] == "5.5"
        # The backing kernel's features: ipykernel 7 (the PyPI stack) has
        # subshells too, Debian's 6.17 not.
        want = ["debugger", "kernel subshells"] if MODERN else ["debugger"]
        assert c["supported_features"] == want, c


def test_breakpoint_round_trip(dkernel):
    """initialize → attach → dumpCell → setBreakpoints → configurationDone, a cell
    that stops at the breakpoint, stackTrace and variables while stopped, continue."""
    init = debug(dkernel, "initialize", {
        "clientID": "test", "clientName": "test", "adapterID": "", "pathFormat": "path",
        "linesStartAt1": True, "columnsStartAt1": True, "supportsVariableType": True,
        "supportsVariablePaging": True, "supportsRunInTerminalRequest": True, "locale": "en"})
    assert init["success"], init
    assert debug(dkernel, "attach")["success"]
    code = "def f(a, b):\n    c = a + b\n    return c\n\nresult = f(2, 3)\nprint('result', result)\n"
    source = debug(dkernel, "dumpCell", {"code": code})["body"]["sourcePath"]
    bp = debug(dkernel, "setBreakpoints", {"breakpoints": [{"line": 2}], "source": {"path": source},
                                           "sourceModified": False})
    assert bp["success"] and bp["body"]["breakpoints"][0]["verified"], bp
    assert source in [b["source"] for b in debug(dkernel, "debugInfo")["body"]["breakpoints"]]
    assert debug(dkernel, "configurationDone")["success"]

    cell = dkernel.execute(code)
    stopped = wait_event(dkernel, "stopped")
    assert stopped["body"]["reason"] == "breakpoint", stopped
    thread = stopped["body"]["threadId"]
    frames = debug(dkernel, "stackTrace", {"threadId": thread})["body"]["stackFrames"]
    assert frames[0]["name"] == "f" and frames[0]["line"] == 2, frames[0]
    scopes = debug(dkernel, "scopes", {"frameId": frames[0]["id"]})["body"]["scopes"]
    local = next(s for s in scopes if s["name"] == "Locals")
    names = {v["name"]: v["value"] for v in
             debug(dkernel, "variables", {"variablesReference": local["variablesReference"]})["body"]["variables"]}
    assert names.get("a") == "2" and names.get("b") == "3", names
    assert debug(dkernel, "continue", {"threadId": thread})["success"]

    reply = dkernel.reply(cell, timeout=TIMEOUT)
    assert reply["content"]["status"] == "ok", reply["content"]
    out = "".join(m["content"].get("text", "") for m in dkernel.iopub_until_idle(cell)
                  if m["header"]["msg_type"] == "stream")
    assert "result 5" in out
    debug(dkernel, "setBreakpoints", {"breakpoints": [], "source": {"path": source}, "sourceModified": False})
    assert debug(dkernel, "disconnect", {"restart": False, "terminateDebuggee": True})["success"]


def test_iopub_welcome_to_each_subscriber():
    """Each new iopub subscriber's first message is iopub_welcome naming its
    subscription; jupyter_client, which does not know it, keeps working."""
    km = KernelManager(kernel_name=KERNEL)
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    ctx = zmq.Context()
    try:
        kc.wait_for_ready(timeout=TIMEOUT)
        session = Session(key=km.session.key, signature_scheme=km.session.signature_scheme)
        url = f"{km.transport}://{km.ip}:{km.iopub_port}"
        for topic in (b"", b""):  # every subscriber, not only the first
            sub = ctx.socket(zmq.SUB)
            sub.linger = 0
            sub.rcvtimeo = TIMEOUT * 1000
            sub.setsockopt(zmq.SUBSCRIBE, topic)
            sub.connect(url)
            _, frames = session.feed_identities(sub.recv_multipart())
            msg = session.deserialize(frames)
            assert msg["header"]["msg_type"] == "iopub_welcome", msg["header"]
            assert msg["content"] == {"subscription": topic.decode()}
            assert msg["parent_header"] == {}
            sub.close()
        reply = kc.execute_interactive("print('still fine')", timeout=TIMEOUT)
        assert reply["content"]["status"] == "ok"
    finally:
        ctx.term()
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_subshell_id_header_is_tolerated(dkernel):
    """A request carrying a subshell_id (protocol 5.5 kernel subshells, which we
    do not offer) runs on the main shell, and its parent header is echoed whole."""
    msg = dkernel.kc.session.msg("execute_request", {"code": "1 + 1", "silent": False, "store_history": True,
                                                      "user_expressions": {}, "allow_stdin": False,
                                                      "stop_on_error": True})
    msg["header"]["subshell_id"] = None
    dkernel.kc.shell_channel.send(msg)
    msg_id = msg["header"]["msg_id"]
    reply = dkernel.reply(msg_id)
    assert reply["content"]["status"] == "ok"
    assert "subshell_id" in reply["parent_header"]
    msgs = dkernel.iopub_until_idle(msg_id)
    assert any(m["header"]["msg_type"] == "execute_result" for m in msgs), sequence(msgs)


def test_kernelspec_names_its_protocol():
    assert spec_json(KERNEL)["kernel_protocol_version"] == "5.5"
