"""A small test driver over jupyter_client's BlockingKernelClient.

It keeps every message it reads, filed by parent msg_id, so that a test can
send several requests at once and still look at each request's replies and
iopub traffic in order. Failures carry the message sequence that was seen.
"""

import json
import os
import signal
import threading
import time
from queue import Empty

from jupyter_client import KernelManager

TIMEOUT = 20


def run_cell(kc, code, timeout=TIMEOUT):
    """Execute code on a jupyter_client client; return the reply's status and
    the cell's own iopub messages, up to its idle status."""
    msg_id = kc.execute(code)
    msgs = []
    while True:
        msg = kc.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
        msgs.append(msg)
    reply = kc.get_shell_msg(timeout=timeout)
    assert reply["parent_header"]["msg_id"] == msg_id
    return reply["content"]["status"], msgs


def summary(msg):
    """One line per message: type, and the content field that matters most."""
    t = msg["header"]["msg_type"]
    c = msg.get("content", {})
    extra = ""
    if t == "status":
        extra = c.get("execution_state", "")
    elif t == "stream":
        extra = f"{c.get('name')}: {c.get('text', '')[:60]!r}"
    elif t == "error":
        extra = f"{c.get('ename')}: {c.get('evalue', '')[:60]!r}"
    elif t.endswith("_reply"):
        extra = c.get("status", "")
        if "execution_count" in c:
            extra += f" count={c['execution_count']}"
    elif "execution_count" in c:
        extra = f"count={c['execution_count']}"
    elif t.startswith("comm_"):
        extra = json.dumps(c.get("data", {}))[:60]
    return f"{t}({extra})" if extra else t


def sequence(msgs):
    return "\n  ".join([""] + [summary(m) for m in msgs]) or " (none)"


class Kernel:
    """A started kernel plus a client; use as a context manager or call close()."""

    def __init__(self, name, **km_args):
        self.name = name
        self.km = KernelManager(kernel_name=name, **km_args)
        self.km.start_kernel()
        self.kc = self.km.client()
        self.kc.start_channels()
        try:
            self.kc.wait_for_ready(timeout=TIMEOUT)
        except Exception:
            self.close()
            raise
        self.iopub = {}  # parent msg_id -> [msgs]
        self.replies = {"shell": {}, "control": {}}
        self.flush(quiet=0.05)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        try:
            self.kc.stop_channels()
        finally:
            if self.km.has_kernel:
                self.km.shutdown_kernel(now=False)

    # -- reading -----------------------------------------------------------

    def _channel(self, name):
        return {"shell": self.kc.shell_channel, "control": self.kc.control_channel,
                "iopub": self.kc.iopub_channel, "stdin": self.kc.stdin_channel}[name]

    def _get(self, name):
        return {"shell": self.kc.get_shell_msg, "control": self.kc.get_control_msg,
                "iopub": self.kc.get_iopub_msg, "stdin": self.kc.get_stdin_msg}[name]

    def _pump(self, name, timeout):
        """Read one message from a channel into the buffers; False on timeout."""
        try:
            msg = self._get(name)(timeout=timeout)
        except Empty:
            return False
        parent = msg["parent_header"].get("msg_id", "")
        if name == "iopub":
            self.iopub.setdefault(parent, []).append(msg)
        else:
            self.replies[name].setdefault(parent, []).append(msg)
        return True

    def flush(self, quiet=0.1, channels=("iopub", "shell", "control")):
        """Read the channels into the buffers until each has been quiet for `quiet` seconds."""
        for name in channels:
            while self._pump(name, quiet):
                pass

    def reply(self, msg_id, channel="shell", timeout=TIMEOUT):
        """The reply to msg_id on channel, waiting up to timeout seconds."""
        deadline = time.monotonic() + timeout
        while not self.replies[channel].get(msg_id):
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(
                    f"{self.name}: no {channel} reply to {msg_id} within {timeout}s; "
                    f"iopub for it so far:{sequence(self.iopub.get(msg_id, []))}")
            self._pump(channel, min(left, 0.5))
        return self.replies[channel][msg_id].pop(0)

    def iopub_until_idle(self, msg_id, timeout=TIMEOUT):
        """All iopub messages with parent msg_id, up to and including status idle."""
        deadline = time.monotonic() + timeout
        while True:
            msgs = self.iopub.get(msg_id, [])
            if any(m["header"]["msg_type"] == "status"
                   and m["content"]["execution_state"] == "idle" for m in msgs):
                return list(msgs)
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(
                    f"{self.name}: no status idle for {msg_id} within {timeout}s; "
                    f"saw:{sequence(msgs)}")
            self._pump("iopub", min(left, 0.5))

    # -- requests ----------------------------------------------------------

    def send(self, msg_type, content=None, channel="shell"):
        msg = self.kc.session.msg(msg_type, content or {})
        self._channel(channel).send(msg)
        return msg["header"]["msg_id"]

    def execute(self, code, channel="shell", **kw):
        content = dict(code=code, silent=False, store_history=True, user_expressions={},
                       allow_stdin=False, stop_on_error=True)
        content.update(kw)
        return self.send("execute_request", content, channel)

    def run(self, code, timeout=TIMEOUT, **kw):
        """Execute and wait: (reply, iopub messages up to idle)."""
        msg_id = self.execute(code, **kw)
        reply = self.reply(msg_id, timeout=timeout)
        return reply, self.iopub_until_idle(msg_id, timeout=timeout)

    def run_after_error(self, code, tries=5):
        """run(), retried while the reply is "aborted".

        ipykernel sends an error reply before it starts aborting queued requests
        (stop_on_error), so a request sent the moment that reply arrives can still be
        aborted. That is the kernel being alive and following the spec; retry.
        """
        for _ in range(tries):
            reply, msgs = self.run(code)
            if reply["content"]["status"] != "aborted":
                break
            time.sleep(0.05)
        return reply, msgs

    @staticmethod
    def stdout(msgs):
        """The text a cell's iopub messages printed to stdout."""
        return "".join(m["content"]["text"] for m in msgs
                       if m["header"]["msg_type"] == "stream" and m["content"]["name"] == "stdout")

    def value(self, code, after_error=False):
        """The text/plain execute_result of code, evaluated in the (backing) kernel."""
        reply, msgs = self.run_after_error(code) if after_error else self.run(code)
        assert reply["content"]["status"] == "ok", (reply["content"], sequence(msgs))
        for m in msgs:
            if m["header"]["msg_type"] == "execute_result":
                return m["content"]["data"]["text/plain"]
        raise AssertionError(f"no execute_result for {code!r}:{sequence(msgs)}")


# -- processes ---------------------------------------------------------------

def _stat(pid):
    """(state, ppid) of pid, or None if it does not exist."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            data = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    rest = data[data.rindex(")") + 2:].split()
    return rest[0], int(rest[1])


def descendants(root):
    """root and every process below it, by walking ppid links in /proc."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            st = _stat(entry)
            if st:
                children.setdefault(st[1], []).append(int(entry))
    out, todo = set(), [root]
    while todo:
        pid = todo.pop()
        if pid not in out:
            out.add(pid)
            todo.extend(children.get(pid, []))
    return out


def alive(pids):
    """The pids that still exist and are not zombies."""
    return {p for p in pids if (st := _stat(p)) and st[0] != "Z"}


def wait_gone(pids, timeout=10.0):
    """Wait for pids to exit; return those still alive at the deadline."""
    deadline = time.monotonic() + timeout
    while (left := alive(pids)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def describe(pids):
    out = []
    for p in sorted(pids):
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            cmd = "?"
        out.append(f"{p}: {cmd}")
    return "\n  ".join([""] + out)


def pids_of(binary):
    """The live processes whose executable is binary."""
    target = os.path.realpath(binary)
    out = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            exe = os.readlink(f"/proc/{entry}/exe")
        except OSError:
            continue
        if exe == target and alive([int(entry)]):
            out.add(int(entry))
    return out


def _cmdline(pid):
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return f.read()


class ChainGuard:
    """Bounds a test that could start a runaway chain of kernels.

    A thread counts the processes running `binary` (beyond those that ran
    before) every 50 ms. Past `limit` it SIGKILLs all of them, so that a
    broken guard costs a failed test, not the machine. On exit every one of
    them still alive is killed too. `peak` is the most seen at once.
    """

    def __init__(self, binary, limit=4):
        self.binary, self.limit = binary, limit
        self.before = pids_of(binary)
        self.peak, self.tripped = 0, False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def current(self):
        """The processes of binary since the guard began, less a child an
        agentkernel is starting that has not exec'd yet: a fork has its
        parent's executable and command line for a moment, while a nested
        agentkernel has a command line of its own (its connection file)."""
        pids = pids_of(self.binary)
        forks = set()
        for p in pids:
            try:
                ppid = int(open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[1])
                if ppid in pids and _cmdline(p) == _cmdline(ppid):
                    forks.add(p)
            except (OSError, ValueError, IndexError):
                pass
        return pids - forks - self.before

    def _watch(self):
        while not self._stop.wait(0.05):
            now = self.current()
            self.peak = max(self.peak, len(now))
            if len(now) > self.limit:
                self.tripped = True
                self._kill(now)

    def _kill(self, pids):
        for p in pids:
            for q in descendants(p):
                try:
                    os.kill(q, signal.SIGKILL)
                except OSError:
                    pass

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self._kill(self.current())
        assert not self.tripped, f"more than {self.limit} agentkernel processes at once: a chain of kernels"
