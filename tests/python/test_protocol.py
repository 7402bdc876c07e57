"""Protocol checks that jupyter_kernel_test does not make.

Every test runs against agentkernel (code mode) with both backings — local
(``agentkernel-test``) and on a Jupyter server (``agentkernel-test-gw``) — and
against Debian's python3 ipykernel directly: the reference run proves the
assertions hold for the kernel being proxied, so a failure on agentkernel alone
is agentkernel's.
"""

import hashlib
import hmac
import json
import time
import uuid
from datetime import datetime, timezone

import pytest
import zmq

import jkt_compat
from jupyter_kernel_test import msgspec_v5
from conftest import KERNEL, KERNEL_GW, KERNEL_SIGNAL, KERNEL_SIGNAL_GW, WHERE, backing_for
from kclient import Kernel, describe, descendants, sequence, wait_gone

KERNELS = [KERNEL, KERNEL_GW, "python3"]

ECHO_TARGET = '''
def _ak_echo_target(comm, open_msg):
    @comm.on_msg
    def _echo(msg):
        comm.send({"echo": msg["content"]["data"]})
get_ipython().kernel.comm_manager.register_target("ak_echo", _ak_echo_target)
'''


@pytest.fixture(scope="module", params=KERNELS)
def kernel(request):
    backing = backing_for(request, request.param)
    with Kernel(request.param) as k:
        reply, msgs = k.run(ECHO_TARGET)
        assert reply["content"]["status"] == "ok", sequence(msgs)
        if request.param != "python3":
            _, msgs = k.run(WHERE)
            backing.check_where_code_runs(k.km.provisioner.pid, k.stdout(msgs))
        yield k


def assert_bracketed(k, msg_id, what):
    """The request's iopub traffic starts with busy, ends with idle, and nothing follows."""
    k.iopub_until_idle(msg_id)
    k.flush(quiet=0.1, channels=("iopub",))  # anything late for this parent lands in the buffer
    msgs = k.iopub.get(msg_id, [])
    states = [m["content"]["execution_state"] for m in msgs
              if m["header"]["msg_type"] == "status"]
    ok = (msgs and msgs[0]["header"]["msg_type"] == "status" and states[0] == "busy"
          and msgs[-1]["header"]["msg_type"] == "status" and states[-1] == "idle"
          and states == ["busy", "idle"])
    assert ok, f"{k.name}: {what}: iopub for the request must be busy … idle, saw:{sequence(msgs)}"
    for m in msgs:
        if m["header"]["msg_type"] in msgspec_v5.schema_fragments:
            jkt_compat.validate_message(m, m["header"]["msg_type"])
    return msgs


REQUESTS = [
    ("kernel_info_request", {}),
    ("execute_request", dict(code="1+1", silent=False, store_history=True, user_expressions={},
                             allow_stdin=False, stop_on_error=True)),
    ("complete_request", {"code": "zi", "cursor_pos": 2}),
    ("inspect_request", {"code": "zip", "cursor_pos": 3, "detail_level": 0}),
    ("is_complete_request", {"code": "for x in y:"}),
    ("history_request", {"output": False, "raw": True, "hist_access_type": "tail", "n": 2}),
    ("comm_info_request", {}),
]


@pytest.mark.parametrize("channel", ["shell", "control"])
@pytest.mark.parametrize("msg_type,content", REQUESTS, ids=[r[0] for r in REQUESTS])
def test_busy_idle_brackets_request(kernel, channel, msg_type, content):
    msg_id = kernel.send(msg_type, content, channel)
    reply = kernel.reply(msg_id, channel, timeout=5)
    want = msg_type.replace("_request", "_reply")
    assert reply["header"]["msg_type"] == want, sequence([reply])
    jkt_compat.validate_message(reply, want, msg_id)
    if msg_type == "is_complete_request":
        assert reply["content"]["status"] == "incomplete", reply["content"]
    else:
        assert reply["content"]["status"] == "ok", reply["content"]
    assert_bracketed(kernel, msg_id, f"{msg_type} on {channel}")


def test_busy_idle_brackets_interrupt_on_control(kernel):
    msg_id = kernel.send("interrupt_request", {}, "control")
    reply = kernel.reply(msg_id, "control")
    assert reply["header"]["msg_type"] == "interrupt_reply"
    assert reply["parent_header"]["msg_id"] == msg_id
    if kernel.name == "python3":
        # ipykernel 6.17 echoes the request's (empty) content instead of {"status": "ok"}.
        assert reply["content"].get("status", "ok") == "ok", reply["content"]
    else:
        jkt_compat.validate_message(reply, "interrupt_reply", msg_id)
        assert reply["content"]["status"] == "ok", reply["content"]
    assert_bracketed(kernel, msg_id, "interrupt_request on control")
    # An interrupt while idle must not break the next cell.
    assert kernel.value("40+2") == "42"


def test_comm_round_trip_from_frontend(kernel):
    """comm_open/msg/close from the frontend (the ipywidgets path), each bracketed."""
    comm_id = uuid.uuid4().hex
    mid = kernel.send("comm_open", {"comm_id": comm_id, "target_name": "ak_echo", "data": {}})
    assert_bracketed(kernel, mid, "comm_open")

    mid = kernel.send("comm_info_request", {"target_name": "ak_echo"})
    comms = kernel.reply(mid)["content"]["comms"]
    assert comms.get(comm_id) == {"target_name": "ak_echo"}, comms
    assert_bracketed(kernel, mid, "comm_info_request")

    mid = kernel.send("comm_msg", {"comm_id": comm_id, "data": {"n": 7}})
    msgs = assert_bracketed(kernel, mid, "comm_msg")
    echoes = [m for m in msgs if m["header"]["msg_type"] == "comm_msg"]
    assert [e["content"] for e in echoes] == [{"comm_id": comm_id, "data": {"echo": {"n": 7}}}], \
        sequence(msgs)

    mid = kernel.send("comm_close", {"comm_id": comm_id, "data": {}})
    assert_bracketed(kernel, mid, "comm_close")
    mid = kernel.send("comm_info_request", {"target_name": "ak_echo"})
    assert comm_id not in kernel.reply(mid)["content"]["comms"]
    kernel.iopub_until_idle(mid)


def test_comm_info_sees_kernel_side_comm(kernel):
    code = ("from ipykernel.comm import Comm\n"
            "_ak_comm = Comm(target_name='ak_kernel_side', data={'x': 1})\n"
            "_ak_comm.comm_id")
    reply, msgs = kernel.run(code)
    assert reply["content"]["status"] == "ok", sequence(msgs)
    opens = [m for m in msgs if m["header"]["msg_type"] == "comm_open"]
    assert len(opens) == 1, sequence(msgs)
    comm_id = opens[0]["content"]["comm_id"]
    assert opens[0]["content"]["target_name"] == "ak_kernel_side"
    assert opens[0]["content"]["data"] == {"x": 1}

    mid = kernel.send("comm_info_request", {"target_name": "ak_kernel_side"})
    comms = kernel.reply(mid)["content"]["comms"]
    assert comms == {comm_id: {"target_name": "ak_kernel_side"}}, comms
    mid = kernel.send("comm_info_request", {})
    assert comm_id in kernel.reply(mid)["content"]["comms"]

    reply, msgs = kernel.run("_ak_comm.close()")
    assert [m["content"]["comm_id"] for m in msgs
            if m["header"]["msg_type"] == "comm_close"] == [comm_id], sequence(msgs)
    mid = kernel.send("comm_info_request", {"target_name": "ak_kernel_side"})
    assert kernel.reply(mid)["content"]["comms"] == {}


def _types(msgs):
    return [m["header"]["msg_type"] for m in msgs]


def test_execution_count_silent_and_store_history(kernel):
    reply, msgs = kernel.run("'first'")
    n = reply["content"]["execution_count"]
    inputs = [m for m in msgs if m["header"]["msg_type"] == "execute_input"]
    results = [m for m in msgs if m["header"]["msg_type"] == "execute_result"]
    assert [m["content"]["execution_count"] for m in inputs] == [n], sequence(msgs)
    assert [m["content"]["execution_count"] for m in results] == [n], sequence(msgs)

    # silent: no execute_input, no result, no increment
    reply, msgs = kernel.run("'silent'", silent=True)
    assert reply["content"]["status"] == "ok"
    assert _types(msgs) == ["status", "status"], f"silent execute:{sequence(msgs)}"

    # store_history=False: runs and shows its result, but the count does not move
    reply, msgs = kernel.run("'unstored'", store_history=False)
    assert reply["content"]["status"] == "ok"
    assert "execute_input" in _types(msgs), sequence(msgs)
    assert "execute_result" in _types(msgs), sequence(msgs)

    reply, msgs = kernel.run("'second'")
    assert reply["content"]["execution_count"] == n + 1, \
        f"silent/store_history=False must not increment execution_count:{sequence(msgs)}"
    results = [m for m in msgs if m["header"]["msg_type"] == "execute_result"]
    assert [m["content"]["execution_count"] for m in results] == [n + 1], sequence(msgs)


def test_stop_on_error_aborts_queued_execute(kernel, tmp_path):
    marker = tmp_path / "ran"
    first = kernel.execute("raise ValueError('first fails')")
    second = kernel.execute(f"open({str(marker)!r}, 'w').close()")
    r1, r2 = kernel.reply(first), kernel.reply(second)
    io1 = kernel.iopub_until_idle(first)
    assert r1["content"]["status"] == "error", sequence([r1] + io1)
    assert r1["content"]["ename"] == "ValueError"
    assert r2["content"]["status"] == "aborted", \
        f"queued execute behind an error must be aborted, got:{sequence([r2])}"
    jkt_compat.validate_message(r2, "execute_reply", second)
    assert not marker.exists(), "the aborted cell ran"
    # Aborting stops once the queue is drained: the next cell runs.
    assert kernel.value("'after abort'", after_error=True) == "'after abort'"


def test_stop_on_error_false_keeps_queue(kernel, tmp_path):
    marker = tmp_path / "ran"
    first = kernel.execute("raise ValueError('first fails')", stop_on_error=False)
    second = kernel.execute(f"open({str(marker)!r}, 'w').close()")
    r1, r2 = kernel.reply(first), kernel.reply(second)
    assert r1["content"]["status"] == "error"
    assert r2["content"]["status"] == "ok", sequence([r2] + kernel.iopub_until_idle(second))
    assert marker.exists()


def test_heartbeat(kernel):
    assert kernel.km.is_alive()
    deadline = time.monotonic() + 10
    while not kernel.kc.hb_channel.is_beating() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert kernel.kc.hb_channel.is_beating()
    # And a raw ping on the hb socket is echoed back unchanged.
    ctx = zmq.Context.instance()
    sock = ctx.socket(zmq.REQ)
    sock.linger = 0
    try:
        sock.connect(f"{kernel.km.transport}://{kernel.km.ip}:{kernel.km.hb_port}")
        payload = b"ping-" + uuid.uuid4().hex.encode()
        sock.send(payload)
        assert sock.poll(5000), "no heartbeat echo within 5 s"
        assert sock.recv() == payload
    finally:
        sock.close()


def test_stdin_input_round_trip(kernel):
    msg_id = kernel.execute("_ak_answer = input('x')\nprint('got', _ak_answer)", allow_stdin=True)
    req = kernel.kc.get_stdin_msg(timeout=10)
    jkt_compat.validate_message(req, "input_request")
    assert req["parent_header"]["msg_id"] == msg_id
    assert req["content"] == {"prompt": "x", "password": False}
    kernel.kc.input("hello agent")
    reply = kernel.reply(msg_id)
    msgs = kernel.iopub_until_idle(msg_id)
    assert reply["content"]["status"] == "ok", sequence([reply] + msgs)
    out = "".join(m["content"]["text"] for m in msgs if m["header"]["msg_type"] == "stream")
    assert out == "got hello agent\n", sequence(msgs)
    assert kernel.value("_ak_answer") == "'hello agent'"


def test_input_without_stdin_errors(kernel):
    reply, msgs = kernel.run("input('x')", allow_stdin=False)
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "StdinNotImplementedError", reply["content"]


def _sign(key, frames):
    h = hmac.new(key, digestmod=hashlib.sha256)
    for f in frames:
        h.update(f)
    return h.hexdigest().encode()


def _raw_execute(code):
    header = {"msg_id": uuid.uuid4().hex, "username": "mallory", "session": uuid.uuid4().hex,
              "date": datetime.now(timezone.utc).isoformat(), "msg_type": "execute_request",
              "version": "5.3"}
    content = {"code": code, "silent": False, "store_history": True, "user_expressions": {},
               "allow_stdin": False, "stop_on_error": True}
    return header["msg_id"], [json.dumps(x).encode() for x in (header, {}, {}, content)]


def test_forged_signature_is_not_executed(kernel, tmp_path):
    # Settle first: right after an error (the previous test) ipykernel aborts
    # the next cell for a moment, which would abort the positive control.
    kernel.value("1", after_error=True)
    key = kernel.km.session.key
    assert key, "kernel launched without a signing key"
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.linger = 0
    sock.connect(f"{kernel.km.transport}://{kernel.km.ip}:{kernel.km.shell_port}")
    try:
        forged = {}
        for case in ("wrong-key", "empty", "garbage", "tampered", "truncated"):
            marker = tmp_path / case
            msg_id, frames = _raw_execute(f"open({str(marker)!r}, 'w').close()")
            if case == "wrong-key":
                sig = _sign(b"not-the-key", frames)
            elif case == "empty":
                sig = b""
            elif case == "garbage":
                sig = b"deadbeef" * 8
            elif case == "tampered":  # signed benign cell, content swapped afterwards
                msg_id, benign = _raw_execute("pass")
                sig = _sign(key, benign)
                frames = benign[:3] + frames[3:]
            else:
                sig = _sign(key, frames)[:-1]
            sock.send_multipart([b"<IDS|MSG>", sig] + frames)
            forged[msg_id] = marker

        # Positive control: the same raw path with the right key does run.
        good = tmp_path / "good"
        good_id, frames = _raw_execute(f"open({str(good)!r}, 'w').close()")
        sock.send_multipart([b"<IDS|MSG>", _sign(key, frames)] + frames)
        assert sock.poll(10000), "no reply to a correctly signed raw execute"
        reply = sock.recv_multipart()
        delim = reply.index(b"<IDS|MSG>")
        parent = json.loads(reply[delim + 3])
        assert parent["msg_id"] == good_id, "the only reply must be to the signed message"
        assert json.loads(reply[delim + 5])["status"] == "ok", reply[delim + 5]
        assert good.exists()
        assert not sock.poll(300), "a forged message got a reply"
    finally:
        sock.close()

    # The kernel still answers, and none of the forged cells ran or made iopub noise.
    assert kernel.value("6*7") == "42"
    kernel.flush(quiet=0.1, channels=("iopub",))
    for msg_id, marker in forged.items():
        assert not marker.exists(), f"forged message ran: {marker.name}"
        assert msg_id not in kernel.iopub, f"forged {marker.name}:{sequence(kernel.iopub[msg_id])}"


# -- interrupts: a fresh kernel each, both interrupt modes -------------------

INTERRUPT_KERNELS = [KERNEL, KERNEL_SIGNAL, KERNEL_GW, KERNEL_SIGNAL_GW, "python3"]


def _wait_running(k, msg_id):
    """Wait until the cell's execute_input is out, i.e. the code is running."""
    deadline = time.monotonic() + 10
    while not any(m["header"]["msg_type"] == "execute_input" for m in k.iopub.get(msg_id, [])):
        assert time.monotonic() < deadline, f"cell never started:{sequence(k.iopub.get(msg_id, []))}"
        k._pump("iopub", 0.1)
    time.sleep(0.3)  # let it get into the blocking call


def _assert_interrupted(k, msg_id, started):
    reply = k.reply(msg_id, timeout=20)
    elapsed = time.monotonic() - started
    msgs = k.iopub_until_idle(msg_id)
    assert reply["content"]["status"] == "error", sequence([reply] + msgs)
    assert reply["content"]["ename"] == "KeyboardInterrupt", reply["content"]
    errors = [m for m in msgs if m["header"]["msg_type"] == "error"]
    assert [e["content"]["ename"] for e in errors] == ["KeyboardInterrupt"], sequence(msgs)
    assert elapsed < 10, f"interrupt took {elapsed:.1f}s"
    # The kernel (and, in code mode, its backing kernel) survives the interrupt.
    assert k.km.is_alive()
    assert k.value("'still here'", after_error=True) == "'still here'"
    return elapsed


@pytest.mark.parametrize("name", INTERRUPT_KERNELS)
def test_interrupt_sleep(request, name):
    backing_for(request, name)
    with Kernel(name) as k:
        msg_id = k.execute("import time; time.sleep(30)")
        _wait_running(k, msg_id)
        started = time.monotonic()
        k.km.interrupt_kernel()
        elapsed = _assert_interrupted(k, msg_id, started)
        print(f"{name}: sleep interrupted in {elapsed * 1000:.0f} ms")


@pytest.mark.parametrize("name", INTERRUPT_KERNELS)
def test_interrupt_input_wait(request, name):
    backing_for(request, name)
    with Kernel(name) as k:
        msg_id = k.execute("input('waiting')", allow_stdin=True)
        req = k.kc.get_stdin_msg(timeout=10)
        assert req["content"]["prompt"] == "waiting"
        started = time.monotonic()
        k.km.interrupt_kernel()
        _assert_interrupted(k, msg_id, started)
        # No stale input_request is left behind.
        with pytest.raises(Exception):
            k.kc.get_stdin_msg(timeout=0.3)


# -- process lifetime --------------------------------------------------------

LIFETIME_KERNELS = [KERNEL, KERNEL_GW, "python3"]


def _kernel_tree(k, backing):
    """The kernel's pid, the pid the code runs in, every process under the
    kernel, and the id of the server kernel the code runs in (gateway)."""
    root = k.km.provisioner.pid
    _, msgs = k.run(WHERE)
    runner, kid = backing.check_where_code_runs(root, k.stdout(msgs))
    return root, runner, descendants(root), kid


def _assert_gone(backing, tree, kid, what):
    """The processes and the server kernel (gateway) go away after what."""
    left = wait_gone(tree)
    assert not left, f"{what} left processes behind:{describe(left)}"
    if kid is not None:
        assert not backing.server.wait_gone({kid}), f"{what} left kernel {kid} on the server"


@pytest.mark.parametrize("name", LIFETIME_KERNELS)
def test_shutdown_and_restart_leave_no_orphans(request, name):
    backing = backing_for(request, name)
    k = Kernel(name)
    try:
        root, runner, tree, kid = _kernel_tree(k, backing)
        if name != "python3":
            assert runner != root, "code mode must run code in a backing kernel"

        k.km.restart_kernel(now=False)
        k.kc.wait_for_ready(timeout=20)
        _assert_gone(backing, tree, kid, "restart")
        root2, _, tree2, kid2 = _kernel_tree(k, backing)
        assert root2 != root
        assert k.value("1+1") == "2"

        k.kc.stop_channels()
        k.km.shutdown_kernel(now=False)
        _assert_gone(backing, tree2, kid2, "shutdown")
    finally:
        if k.km.has_kernel:
            k.km.shutdown_kernel(now=True)


@pytest.mark.parametrize("name", LIFETIME_KERNELS)
def test_shutdown_request_on_control(request, name):
    """shutdown_request answered on control, bracketed, and the whole tree exits."""
    backing = backing_for(request, name)
    k = Kernel(name)
    try:
        _, _, tree, kid = _kernel_tree(k, backing)
        msg_id = k.send("shutdown_request", {"restart": False}, "control")
        reply = k.reply(msg_id, "control")
        jkt_compat.validate_message(reply, "shutdown_reply", msg_id)
        assert reply["content"]["status"] == "ok"
        assert reply["content"]["restart"] is False
        msgs = k.iopub.get(msg_id, [])
        deadline = time.monotonic() + 5
        while not any(m["content"].get("execution_state") == "idle" for m in msgs) \
                and time.monotonic() < deadline:
            k._pump("iopub", 0.1)
            msgs = k.iopub.get(msg_id, [])
        assert _types(msgs[:1]) == ["status"] and msgs[0]["content"]["execution_state"] == "busy", \
            sequence(msgs)
        _assert_gone(backing, tree, kid, "shutdown_request")
        assert msgs[-1]["content"].get("execution_state") == "idle", \
            f"no status idle for shutdown_request before the kernel exited; iopub:{sequence(msgs)}"
    finally:
        k.kc.stop_channels()
        if k.km.has_kernel:
            k.km.shutdown_kernel(now=True)


@pytest.mark.parametrize("name", LIFETIME_KERNELS)
def test_ipc_transport(request, name, tmp_path):
    """A connection file with transport "ipc" (Unix sockets named ip-port) works end to end."""
    backing_for(request, name)
    with Kernel(name, transport="ipc", ip=str(tmp_path / "k")) as k:
        reply, msgs = k.run("print(6 * 7)")
        assert reply["content"]["status"] == "ok", sequence(msgs)
        assert [m["content"]["text"] for m in msgs if m["header"]["msg_type"] == "stream"] == ["42\n"], \
            sequence(msgs)
        assert _types(msgs[:1]) == ["status"] and _types(msgs[-1:]) == ["status"], sequence(msgs)
        sockets = sorted(p.name for p in tmp_path.iterdir() if p.is_socket())
        assert len(sockets) == 5, sockets  # the five channels really are Unix sockets
