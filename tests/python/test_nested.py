"""agentkernel never starts itself as its own backing kernel.

Each test runs under a ChainGuard: if the guard in the kernel failed, the
chain it would start is killed once it passes a few processes, and the test
fails, instead of the machine filling with kernels.
"""

import json
import os
import subprocess

import pytest

from kclient import ChainGuard, Kernel, descendants, describe, pids_of
from stack import BACKING_PYTHON


def install(binary, prefix, name, backing, mode="code", check=True):
    cmd = [str(binary), "install", "--prefix", str(prefix), "--name", name,
           "--backing", backing, "--mode", mode, "--probe=false"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def error_of(msgs):
    errs = [m["content"] for m in msgs if m["header"]["msg_type"] == "error"]
    assert errs, "no error output"
    return errs[0]["ename"] + ": " + errs[0]["evalue"]


@pytest.fixture
def prefix(tmp_path, monkeypatch):
    """A kernelspec prefix first on JUPYTER_PATH, for this test only."""
    p = tmp_path / "prefix"
    monkeypatch.setenv("JUPYTER_PATH", os.pathsep.join([str(p / "share" / "jupyter"), os.environ["JUPYTER_PATH"]]))
    return p


def test_dropin_python3_backed_by_python3(agentkernel_env, prefix):
    """agentkernel installed as python3 with --backing python3, first on
    JUPYTER_PATH, runs its cells in the real ipykernel (Debian's, or the
    venv's on the PyPI stack): one agentkernel."""
    binary = agentkernel_env["binary"]
    out = install(binary, prefix, "python3", "python3").stdout
    assert "It shadows /usr/share/jupyter/kernels/python3" in out, out
    with ChainGuard(binary) as guard, Kernel("python3") as k:
        assert k.value("import sys; sys.executable") == repr(BACKING_PYTHON)
        assert k.value("'ipykernel' in sys.modules") == "True"
        ours = guard.current()
        assert len(ours) == 1, describe(ours)
        backing = descendants(next(iter(ours))) - ours
        assert any("ipykernel_launcher" in line for line in describe(backing).splitlines()), describe(backing)
    assert guard.peak == 1, guard.peak


def test_backing_names_another_agentkernel(agentkernel_env, prefix):
    """--backing naming an agentkernel kernelspec: install refuses, and a
    hand-written kernelspec that does it anyway fails its cells clearly."""
    binary = agentkernel_env["binary"]
    install(binary, prefix, "agent-inner", "python3")
    proc = install(binary, prefix, "agent-outer", "agent-inner", check=False)
    assert proc.returncode != 0
    assert "agentkernel cannot be its own backing kernel" in proc.stderr, proc.stderr
    assert "agent-inner" in proc.stderr and "--backing" in proc.stderr, proc.stderr

    spec = prefix / "share" / "jupyter" / "kernels" / "agent-outer"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(binary), "kernel", "-f", "{connection_file}", "--backing", "agent-inner"],
        "display_name": "outer", "language": "python", "interrupt_mode": "message"}))
    with ChainGuard(binary) as guard, Kernel("agent-outer") as k:
        reply, msgs = k.run("1 + 1")
        assert reply["content"]["status"] == "error"
        err = error_of(msgs)
        assert "agentkernel cannot be its own backing kernel" in err and "agent-inner" in err, err
        # The kernel keeps serving: the next cell gets the same answer.
        reply, msgs = k.run_after_error("2 + 2")
        assert reply["content"]["status"] == "error" and "agent-inner" in error_of(msgs)
        ours = guard.current()
        assert len(ours) == 1, describe(ours)
        assert descendants(next(iter(ours))) == ours, describe(descendants(next(iter(ours))))
    assert guard.peak == 1, guard.peak


def test_wrapper_kernelspec_stopped_by_the_mark(agentkernel_env, prefix):
    """A kernelspec that starts agentkernel through a script (so its argv
    does not show it) is found by the lookup; the environment mark stops the
    agentkernel it starts from starting a backing kernel of its own."""
    binary = agentkernel_env["binary"]
    wrap = prefix / "share" / "jupyter" / "kernels" / "wrapped"
    wrap.mkdir(parents=True)
    (wrap / "start.sh").write_text(f'#!/bin/sh\nexec "{binary}" kernel -f "$1" --backing python3\n')
    (wrap / "kernel.json").write_text(json.dumps({
        "argv": ["/bin/sh", "{resource_dir}/start.sh", "{connection_file}"],
        "display_name": "A wrapper", "language": "python", "interrupt_mode": "message"}))
    install(binary, prefix, "agent-over-wrapper", "wrapped")
    with ChainGuard(binary) as guard, Kernel("agent-over-wrapper") as k:
        reply, msgs = k.run("1 + 1", timeout=60)
        assert reply["content"]["status"] == "error"
        err = error_of(msgs)
        assert "started as the backing kernel of another agentkernel" in err, err
        assert "kernelspec agent-over-wrapper" in err and "pick a real kernel with --backing" in err, err
        ours = guard.current()
        assert len(ours) == 2, describe(ours)
        # The inner one started nothing: its only relative is its wrapper's
        # shell, which exec'd it, so it has no children at all.
        outer = next(p for p in ours if ours <= descendants(p))
        inner = (ours - {outer}).pop()
        assert descendants(inner) == {inner}, describe(descendants(inner))
    assert guard.peak == 2, guard.peak


def test_mark_in_the_environment_of_a_direct_launch(agentkernel_env, monkeypatch):
    """A kernel launched with the mark naming its launcher refuses to proxy,
    whatever its kernelspec is called."""
    binary = agentkernel_env["binary"]
    monkeypatch.setenv("AGENTKERNEL_BACKING_OF", f"1:{os.getpid()}:some-agent")
    with ChainGuard(binary) as guard, Kernel("agentkernel-test") as k:
        reply, msgs = k.run("1 + 1")
        assert reply["content"]["status"] == "error"
        err = error_of(msgs)
        assert f"(pid {os.getpid()}, kernelspec some-agent)" in err, err
        ours = guard.current()
        assert len(ours) == 1 and descendants(next(iter(ours))) == ours, describe(descendants(next(iter(ours))))


def test_install_refuses_to_replace_a_real_kernelspec(agentkernel_env, tmp_path):
    """Installing as python3 where the real python3 lives would destroy it."""
    binary = agentkernel_env["binary"]
    real = tmp_path / "share" / "jupyter" / "kernels" / "python3"
    real.mkdir(parents=True)
    original = json.dumps({"argv": ["/usr/bin/python3", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                           "display_name": "Python 3 (ipykernel)", "language": "python"})
    (real / "kernel.json").write_text(original)
    proc = install(binary, tmp_path, "python3", "python3", check=False)
    assert proc.returncode != 0 and "not agentkernel's" in proc.stderr, proc.stderr
    assert (real / "kernel.json").read_text() == original
    proc = subprocess.run([str(binary), "uninstall", "--prefix", str(tmp_path), "--name", "python3"],
                          capture_output=True, text=True)
    assert proc.returncode != 0 and "not an agentkernel kernelspec" in proc.stderr, proc.stderr
    assert (real / "kernel.json").read_text() == original
