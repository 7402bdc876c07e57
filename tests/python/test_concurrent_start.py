"""Many kernels starting at once: a user with many notebooks open.

Twelve prompt-mode agentkernels that share one store are started together
by jupyter_client (tcp, as Jupyter Server starts them), and each one's
first cell, a ``%%code`` cell, runs in its backing ipykernel, which its
agentkernel starts at the same moment as the eleven others; twenty rounds,
and not one failure. Backing kernels that pick their ports by binding and
releasing them collide ("Address already in use"), and an ipykernel whose
port was taken hangs: agentkernel gives ipykernel ipc sockets instead, and
restarts a kernel that cannot bind its ports.

Every round ends with no process of the round left: none below this
process, none whose command line names the round's runtime directory
(where every connection file of the round is, the agentkernels' and their
backing kernels'). What is left when a round fails is killed.

Also here: a connection file whose ports are 0 (as ipykernel allows) is
bound by agentkernel without a gap, and written back with the ports.
"""

import json
import os
import re
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from jupyter_client import BlockingKernelClient, KernelManager

from kclient import alive, describe, descendants

NAME = "agent-concurrent"
KERNELS = 12
ROUNDS = int(os.environ.get("AGENTKERNEL_CONCURRENT_ROUNDS", "20"))
# Safety nets, not timing assertions: a start that hangs fails the round
# instead of the suite.
READY_TIMEOUT = 90
CELL_TIMEOUT = 120
CELL = "%%code\nimport os\nprint('backing pid', os.getpid())"


@pytest.fixture(scope="module")
def prompt_spec(agentkernel_env):
    subprocess.run([str(agentkernel_env["binary"]), "install", "--prefix", str(agentkernel_env["prefix"]),
                    "--name", NAME, "--mode", "prompt", "--backing", "python3", "--probe=false"],
                   check=True, capture_output=True)
    return NAME


def round_processes(runtime):
    """The processes of a round: below this process, or naming its runtime
    directory on their command line (a backing kernel whose agentkernel
    was killed is reparented, but its connection file is there)."""
    mine = descendants(os.getpid()) - {os.getpid()}
    named = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if str(runtime).encode() in f.read():
                    named.add(int(entry))
        except OSError:
            pass
    return alive(mine | named)


def kill_all(pids):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def output_text(msgs):
    out = []
    for m in msgs:
        c = m["content"]
        if m["msg_type"] == "stream":
            out.append(c["text"])
        elif m["msg_type"] == "error":
            out.append(f"{c['ename']}: {c['evalue']}")
    return "".join(out)


def first_cell(km):
    """Connect to km's kernel, run CELL, return (status, output)."""
    kc = km.client()
    kc.start_channels(hb=False)  # one thread less per kernel: the test needs no heartbeat
    try:
        kc.wait_for_ready(timeout=READY_TIMEOUT)
        msgs = []
        reply = kc.execute_interactive(CELL, output_hook=msgs.append, timeout=CELL_TIMEOUT)
        return reply["content"]["status"], output_text(msgs)
    finally:
        kc.stop_channels()


def run_round(n, env, runtime, cwd):
    kms = []
    try:
        for _ in range(KERNELS):
            km = KernelManager(kernel_name=NAME)
            km.start_kernel(env=env, cwd=str(cwd))
            kms.append(km)
        with ThreadPoolExecutor(max_workers=KERNELS) as pool:
            results = list(pool.map(first_cell, kms))
        failed = [f"kernel {i}: {status}: {out.strip()}" for i, (status, out) in enumerate(results)
                  if status != "ok" or "backing pid" not in out]
        assert not failed, f"round {n}: {len(failed)} of {KERNELS} first cells failed:\n" + "\n".join(failed)
        pids = {re.search(r"backing pid (\d+)", out).group(1) for _, out in results}
        assert len(pids) == KERNELS, f"round {n}: backing kernels shared: {results}"
        for km in kms:
            km.request_shutdown()
        for km in kms:
            km.finish_shutdown(waittime=20)
            km.cleanup_resources()
        kms = []
        deadline = time.monotonic() + 10
        while (left := round_processes(runtime)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not left, f"round {n}: processes left after shutdown:{describe(left)}"
    finally:
        for km in kms:
            try:
                km.shutdown_kernel(now=True)
            except Exception:
                pass
        kill_all(round_processes(runtime))


def test_twelve_kernels_start_at_once(prompt_spec, agentkernel_env, tmp_path):
    data = tmp_path / "data"  # one store for every kernel
    data.mkdir()
    work = tmp_path / "work"  # the notebooks' directory: what prompt mode tracks
    work.mkdir()
    started = time.monotonic()
    for n in range(ROUNDS):
        runtime = tmp_path / f"runtime-{n}"
        runtime.mkdir()
        env = {**os.environ, "AGENTKERNEL_DATA_DIR": str(data), "JUPYTER_RUNTIME_DIR": str(runtime)}
        saved = os.environ.get("JUPYTER_RUNTIME_DIR")
        os.environ["JUPYTER_RUNTIME_DIR"] = str(runtime)  # the connection files jupyter_client writes
        try:
            run_round(n, env, runtime, work)
        finally:
            os.environ["JUPYTER_RUNTIME_DIR"] = saved
        assert not list(runtime.iterdir()), f"round {n}: left in the runtime directory: {list(runtime.iterdir())}"
    print(f"{ROUNDS} rounds of {KERNELS} kernels in {time.monotonic() - started:.1f}s")


def test_ports_left_to_the_kernel(prompt_spec, agentkernel_env, tmp_path):
    """A connection file whose ports are 0: agentkernel binds ports of its
    choosing (no probe and release) and writes them back to the file, as
    ipykernel does; a client that reads the file then talks to it."""
    cf = tmp_path / "kernel-zero.json"
    key = "a" * 64
    cf.write_text(json.dumps({"transport": "tcp", "ip": "127.0.0.1", "key": key, "signature_scheme": "hmac-sha256",
                              "shell_port": 0, "iopub_port": 0, "stdin_port": 0, "control_port": 0, "hb_port": 0}))
    os.chmod(cf, 0o600)
    proc = subprocess.Popen([str(agentkernel_env["binary"]), "kernel", "-f", str(cf), "--mode", "prompt"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**os.environ, "AGENTKERNEL_DATA_DIR": str(tmp_path / "data")})
    try:
        deadline = time.monotonic() + 30
        while True:
            info = json.loads(cf.read_text())
            ports = [info[k] for k in ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")]
            if all(ports) or proc.poll() is not None or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert all(ports), f"ports not written back: {info}; kernel exited {proc.poll()}: " + (
            proc.stderr.read().decode() if proc.poll() is not None else "")
        assert len(set(ports)) == 5 and info["key"] == key, info
        kc = BlockingKernelClient()
        kc.load_connection_file(str(cf))
        kc.start_channels()
        try:
            kc.wait_for_ready(timeout=30)
            reply = kc.execute_interactive("%agent help", output_hook=lambda m: None, timeout=30)
            assert reply["content"]["status"] == "ok", reply["content"]
            kc.shutdown()
            assert proc.wait(timeout=20) == 0
        finally:
            kc.stop_channels()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
