"""A broken config file never kills the kernel.

The kernel starts with defaults, answers kernel_info, and says what is wrong
(file, line, column, the error) in the first cell's output and in %agent help;
cells keep working. `ask` and `run` refuse to run on it, with the message.
"""

import os
import subprocess

import nbformat
import pytest
from jupyter_client import KernelManager

from kclient import run_cell

TIMEOUT = 120
BROKEN = '{\n  "model": "openai:gpt-4.1",\n  "approve": "all"\n  "mode": "default"\n}\n'  # no comma: line 4


@pytest.fixture
def broken_config(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(BROKEN)
    return path


def _run_cell(kc, code):
    """The cell's status and its streams, as (name, text)."""
    status, msgs = run_cell(kc, code, TIMEOUT)
    return status, [(m["content"]["name"], m["content"]["text"]) for m in msgs if m["msg_type"] == "stream"]


def test_kernel_starts_and_says_what_is_wrong(agentkernel_env, broken_config):
    binary = str(agentkernel_env["binary"])
    subprocess.run([binary, "install", "--prefix", str(agentkernel_env["prefix"]), "--name", "agent-broken-config",
                    "--mode", "prompt", "--probe=false"], check=True, capture_output=True)
    env = dict(os.environ, AGENTKERNEL_CONFIG=str(broken_config))
    km = KernelManager(kernel_name="agent-broken-config")
    km.start_kernel(env=env)
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=TIMEOUT)
        assert km.is_alive()
        status, out = _run_cell(kc, "%agent help")
        assert status == "ok"
        stderr = "".join(t for n, t in out if n == "stderr")
        stdout = "".join(t for n, t in out if n == "stdout")
        assert f"{broken_config}:4:" in stderr, stderr
        assert "invalid character" in stderr, stderr
        assert f"{broken_config}:4:" in stdout and "%agent help" in stdout, stdout
        # The first cell only: later cells run as usual, on defaults.
        status, out = _run_cell(kc, "%%code\nprint(6 * 7)")
        assert status == "ok"
        assert out == [("stdout", "42\n")], out
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_ask_and_run_refuse_a_broken_config(agentkernel_env, broken_config, tmp_path):
    binary = str(agentkernel_env["binary"])
    env = dict(os.environ, AGENTKERNEL_CONFIG=str(broken_config), AGENTKERNEL_DATA_DIR=str(tmp_path / "data"))
    ask = subprocess.run([binary, "ask", "--model", "openai:gpt-4.1", "hello"], env=env, capture_output=True,
                         text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL)
    assert ask.returncode != 0
    assert f"{broken_config}:4:" in ask.stderr, ask.stderr

    subprocess.run([binary, "install", "--prefix", str(agentkernel_env["prefix"]), "--name", "agent-broken-run",
                    "--mode", "prompt", "--probe=false"], check=True, capture_output=True)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("Say hello.")]
    nb.metadata["kernelspec"] = {"name": "agent-broken-run", "display_name": "Agent", "language": "markdown"}
    path = tmp_path / "nb.ipynb"
    nbformat.write(nb, str(path))
    run = subprocess.run([binary, "run", str(path)], env=env, capture_output=True, text=True, timeout=TIMEOUT,
                         stdin=subprocess.DEVNULL)
    assert run.returncode != 0
    assert f"{broken_config}:4:" in run.stderr, run.stderr
    assert not (tmp_path / "nb.out.ipynb").exists()


def test_unknown_field_is_named_with_its_line(agentkernel_env, tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text('{\n  "model": "openai:gpt-4.1",\n  "modle": "typo"\n}\n')
    env = dict(os.environ, AGENTKERNEL_CONFIG=str(cfg), AGENTKERNEL_DATA_DIR=str(tmp_path / "data"))
    ask = subprocess.run([str(agentkernel_env["binary"]), "ask", "hello"], env=env, capture_output=True, text=True,
                         timeout=TIMEOUT, stdin=subprocess.DEVNULL)
    assert ask.returncode != 0
    assert f"{cfg}:3:" in ask.stderr and 'unknown field "modle"' in ask.stderr, ask.stderr
