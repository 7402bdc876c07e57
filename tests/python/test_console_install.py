"""`agentkernel install --user` and `--sys-prefix` as Jupyter sees them
(`jupyter kernelspec list`), and the installed kernels driven by Debian's
`jupyter console`, non-interactively: its stdin is piped, so the agent's
followup question is answered on the console's own stdin.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from stack import JUPYTER


def clean_env(**extra):
    """The environment without the session's JUPYTER_PATH, so that only the
    scope under test (and the system's kernels) can supply a kernelspec."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("JUPYTER_PATH", "JUPYTER_DATA_DIR", "XDG_DATA_HOME", "AGENTKERNEL_PYTHON")}
    env.update(extra)
    return env


def install(binary, env, *args):
    proc = subprocess.run([str(binary), "install", *args, "--probe=false"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def kernelspecs(env, python=None):
    """name -> resource dir, as `jupyter kernelspec list --json` (run by python) reports."""
    # `python -m jupyter kernelspec` would run /usr/bin/jupyter-kernelspec, Debian's python.
    cmd = ([python, "-m", "jupyter_client.kernelspecapp", "list", "--json"] if python
           else [JUPYTER, "kernelspec", "list", "--json"])
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return {name: spec["resource_dir"] for name, spec in json.loads(proc.stdout)["kernelspecs"].items()}


def console(kernel, env, lines, timeout=180):
    """Run `jupyter console --simple-prompt` on kernel with lines piped to its stdin; its stdout."""
    proc = subprocess.run([JUPYTER, "console", "--kernel", kernel, "--simple-prompt"],
                          input="".join(l + "\n" for l in lines), env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_install_user(agentkernel_env, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = clean_env(HOME=str(home))
    out = install(agentkernel_env["binary"], env, "--user", "--name", "agent-user", "--mode", "code")
    want = home / ".local/share/jupyter/kernels/agent-user"
    assert str(want) in out
    assert kernelspecs(env)["agent-user"] == str(want)
    spec = json.loads((want / "kernel.json").read_text())
    assert spec["argv"][0] == str(agentkernel_env["binary"]) and spec["metadata"]

    # $JUPYTER_DATA_DIR wins over ~/.local/share/jupyter, as in Jupyter.
    data = tmp_path / "data"
    env_data = clean_env(HOME=str(home), JUPYTER_DATA_DIR=str(data))
    install(agentkernel_env["binary"], env_data, "--user", "--name", "agent-data", "--mode", "code")
    assert kernelspecs(env_data)["agent-data"] == str(data / "kernels/agent-data")

    # In a console, the user-installed code-mode kernel runs code in ipykernel.
    out = console("agent-user", env, ["print(6 * 7)", "import sys; print(sys.version_info[0])"])
    assert "In [1]: 42" in out and "In [2]: 3" in out, out

    proc = subprocess.run([str(agentkernel_env["binary"]), "uninstall", "--user", "--name", "agent-user"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "agent-user" not in kernelspecs(env)


def test_install_sys_prefix(agentkernel_env, tmp_path):
    """--sys-prefix installs into sys.prefix of $AGENTKERNEL_PYTHON: a venv
    here, whose own Jupyter lists the kernel and the system's does not."""
    venv = tmp_path / "venv"
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--without-pip", "--system-site-packages", str(venv)],
                   check=True, timeout=120)
    python = str(venv / "bin" / "python")
    home = tmp_path / "home"
    home.mkdir()
    env = clean_env(HOME=str(home), AGENTKERNEL_PYTHON=python)
    out = install(agentkernel_env["binary"], env, "--sys-prefix", "--name", "agent-venv", "--mode", "code")
    want = venv / "share/jupyter/kernels/agent-venv"
    assert str(want) in out and "finds it there" in out, out
    assert (want / "kernel.json").is_file()
    assert kernelspecs(env, python=python)["agent-venv"] == str(want)
    assert "agent-venv" not in kernelspecs(clean_env(HOME=str(home)))


def test_console_prompt_mode(agentkernel_env, model, tmp_path):
    """A prompt in `jupyter console`: the answer is printed, the agent's
    followup question is asked and answered on the console's stdin, and
    %agent history shows the session."""
    home = tmp_path / "home"
    home.mkdir()
    env = clean_env(HOME=str(home))
    install(agentkernel_env["binary"], env, "--user", "--name", "agent-console", "--mode", "prompt",
            "--model", "openai:gpt-4.1")
    question = {"question": "Which colour do you like?", "suggestions": ["green", "red"]}
    model.enqueue({"steps": [{"text": ["Let me ask."]},
                             {"toolCall": {"id": "q1", "name": "ask_followup_question", "args": [json.dumps(question)]}}]},
                  {"steps": [{"text": ["Green is a fine colour."]}]})
    n = len(model.requests())
    out = console("agent-console", env, ["Pick a colour for me.", "green", "%agent history"])
    assert "Which colour do you like?" in out and "1. green" in out, out
    assert "Green is a fine colour." in out, out
    assert "Pick a colour for me." in out.split("Green is a fine colour.")[1], "no %agent history after the turn"
    reqs = model.requests()[n:]
    assert len(reqs) == 2 and "<answer>\\ngreen\\n</answer>" in json.dumps(reqs[1]["body"])
