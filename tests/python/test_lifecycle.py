"""A kernel never outlives the Jupyter server that started it.

A separate process starts the kernel through jupyter_client (as a Jupyter
server does) and is SIGKILLed, as happens when a server crashes or is
OOM-killed. The agentkernel process must exit within 5 s, its backing kernel
with it, leaving no runtime or connection files and every completed message
of a streaming session in the store.
"""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from kclient import alive, descendants, describe, wait_gone

LAUNCHER = Path(__file__).with_name("launch_kernel.py")


class Launcher:
    """launch_kernel.py as a child process; kill() is the server crash."""

    def __init__(self, kernel, *args):
        self.proc = subprocess.Popen([sys.executable, str(LAUNCHER), kernel, *args],
                                     stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert line, f"launcher exited: {self.proc.wait()}"
        self.info = json.loads(line)
        self.pid = self.info["pid"]
        self.tree = descendants(self.pid)

    def readline(self):
        return self.proc.stdout.readline().strip()

    def kill(self):
        self.tree = descendants(self.pid)  # the backing kernel may have started since
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def cleanup(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for p in alive(self.tree | descendants(self.pid)):
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        self.proc.stdout.close()


@pytest.fixture
def runtime_dir(tmp_path, monkeypatch):
    d = tmp_path / "runtime"
    d.mkdir()
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(d))
    return d


def assert_exits_with_server(launcher, runtime_dir):
    ours = launcher.pid
    backing = launcher.tree - {ours}
    assert backing, f"no backing kernel under the agentkernel process:{describe(launcher.tree)}"
    assert os.listdir(runtime_dir), "the kernel's files are not in the runtime dir"
    launcher.kill()
    left = wait_gone({ours}, timeout=5)
    assert not left, f"agentkernel outlived its server by 5 s:{describe(left)}"
    left = wait_gone(backing, timeout=5)
    assert not left, f"the backing kernel outlived its agentkernel:{describe(left)}"
    assert not Path(launcher.info["connection_file"]).exists(), "connection file left behind"
    assert os.listdir(runtime_dir) == [], f"runtime files left behind: {os.listdir(runtime_dir)}"


def test_code_mode_kernel_exits_with_its_server(agentkernel_env, runtime_dir):
    launcher = Launcher("agentkernel-test", "--cell", "x = 1")
    try:
        assert_exits_with_server(launcher, runtime_dir)
    finally:
        launcher.cleanup()


def test_streaming_session_kept_when_server_dies(agentkernel_env, model, runtime_dir):
    """Prompt mode, a web panel open, a turn streaming when the server dies:
    everything completed before is stored, the streamed tail marked partial."""
    env = agentkernel_env
    subprocess.run([str(env["binary"]), "install", "--prefix", str(env["prefix"]), "--name", "agent-orphan",
                    "--mode", "prompt", "--model", "openai:gpt-4.1", "--approve", "all", "--probe=false"],
                   check=True, capture_output=True)
    model.enqueue({"steps": [{"text": ["First ", "answer ", "done."]}, {"usage": {"input": 10, "output": 3}}]},
                  {"steps": [{"toolCall": {"id": "c1", "name": "execute_code", "args": ['{"code": "y = 2"}']}}]},
                  {"steps": [{"text": ["This part was ", "streamed. "]}, {"stall": True}]})
    launcher = Launcher("agent-orphan", "--cell", "Say something.", "--cell", "%agent webview",
                        "--stream", "Set y, then stream slowly.")
    try:
        assert launcher.readline() == "streaming"
        assert any(f.startswith("webview-") or "webview" in f for f in os.listdir(runtime_dir)), \
            os.listdir(runtime_dir)
        assert_exits_with_server(launcher, runtime_dir)
    finally:
        launcher.cleanup()

    binary = str(env["binary"])
    sessions = json.loads(subprocess.run([binary, "sessions", "list", "--json"], check=True,
                                         capture_output=True, text=True).stdout)
    sid = next(s["id"] for s in sessions if s["title"] == "Say something.")
    export = subprocess.run([binary, "sessions", "export", sid], check=True, capture_output=True, text=True).stdout
    ui = [m for line in export.splitlines() for m in [json.loads(line)] if m.get("kind") == "ui"]
    said = [(m["message"].get("say") or m["message"].get("ask"), m["message"].get("text", ""),
             m["message"].get("partial", False)) for m in ui]
    texts = [t for _, t, _ in said]
    for want in ["Say something.", "First answer done.", "Set y, then stream slowly."]:
        assert want in texts, said
    streamed = [s for s in said if s[1].startswith("This part was streamed.")]
    assert streamed and streamed[-1][2], f"the streamed tail is missing or not marked partial: {said}"
    assert any(kind == "command_output" or kind == "cell_executed" for kind, _, _ in said), said
