"""The Python package: a platform wheel holding the static binary, built
from the checkout (scripts/wheel.sh), installed with pip into a virtual
environment and into --user. `agentkernel install --sys-prefix` from the
environment's own binary puts "Agent" and "Agent (code)" into that
environment's Jupyter (what JupyterLab's launcher lists), and `python -m
agentkernel` runs the binary.

$AGENTKERNEL_WHEEL names a wheel built already; otherwise it is built once
for the module.
"""

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from stack import PYTHON

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel():
    given = os.environ.get("AGENTKERNEL_WHEEL")
    if given:
        return Path(given)
    proc = subprocess.run([str(REPO / "scripts" / "wheel.sh")], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return Path(proc.stdout.strip().splitlines()[-1])


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("JUPYTER_PATH", "JUPYTER_DATA_DIR", "XDG_DATA_HOME", "AGENTKERNEL_PYTHON", "PYTHONPATH")}
    env.update(extra)
    return env


def kernelspecs(python, env):
    """name -> (resource dir, kernel.json), as that python's jupyter_client lists them."""
    proc = subprocess.run([python, "-m", "jupyter_client.kernelspecapp", "list", "--json"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return {n: (s["resource_dir"], s["spec"]) for n, s in json.loads(proc.stdout)["kernelspecs"].items()}


def test_wheel_is_a_platform_wheel_with_the_binary(wheel):
    assert "-py3-none-manylinux_2_17_" in wheel.name and "musllinux_1_1_" in wheel.name, wheel.name
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        binary = [i for i in z.infolist() if i.filename.endswith(".data/scripts/agentkernel")]
    assert binary and (binary[0].external_attr >> 16) & 0o111, names
    assert "agentkernel/__init__.py" in names and "agentkernel/__main__.py" in names, names


def test_venv_install_sys_prefix(wheel, tmp_path):
    """pip install into a venv; its own agentkernel installs the pair into the
    venv's share/jupyter, which that venv's Jupyter lists and the system's does not."""
    venv = tmp_path / "venv"
    # --system-site-packages: the venv's Jupyter is the system's jupyter_client.
    subprocess.run([sys.base_prefix + "/bin/python3", "-m", "venv", "--system-site-packages", str(venv)],
                   check=True, timeout=120)
    py = str(venv / "bin" / "python")
    home = tmp_path / "home"
    home.mkdir()
    env = clean_env(HOME=str(home))
    subprocess.run([py, "-m", "pip", "install", "-q", "--no-index", "--no-deps", str(wheel)], env=env,
                   check=True, timeout=300)
    binary = venv / "bin" / "agentkernel"
    assert binary.is_file() and os.access(binary, os.X_OK)

    proc = subprocess.run([str(binary), "install", "--sys-prefix", "--probe=false"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    specs = kernelspecs(py, env)
    for name, display, mode in (("agent", "Agent", "prompt"), ("agent-code", "Agent (code)", "code")):
        assert name in specs, specs
        resource, spec = specs[name]
        assert resource == str(venv / "share" / "jupyter" / "kernels" / name)
        assert spec["display_name"] == display and spec["argv"][0] == str(binary.resolve()), spec
        assert spec["argv"][spec["argv"].index("--mode") + 1] == mode, spec
    # The system's Jupyter does not see the venv's kernels.
    assert "agent-code" not in kernelspecs(sys.base_prefix + "/bin/python3", env)

    # python -m agentkernel runs the binary.
    out = subprocess.run([py, "-m", "agentkernel", "version"], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.startswith("agentkernel 0."), out


def test_user_install(wheel, tmp_path):
    """pip install --user: the binary in ~/.local/bin, `python -m
    agentkernel` finds it, and its --user install lists the pair."""
    home = tmp_path / "home"
    home.mkdir()
    env = clean_env(HOME=str(home), PYTHONUSERBASE=str(home / ".local"))
    base = sys.base_prefix + "/bin/python3"
    proc = subprocess.run([base, "-m", "pip", "install", "-q", "--user", "--no-index", "--no-deps",
                           "--break-system-packages", str(wheel)], env=env, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0 and "No module named pip" in proc.stderr:
        pytest.skip("Debian's python3 has no pip (python3-pip)")
    assert proc.returncode == 0, proc.stderr
    binary = home / ".local" / "bin" / "agentkernel"
    assert binary.is_file(), list((home / ".local").rglob("*"))
    out = subprocess.run([base, "-m", "agentkernel", "install", "--user", "--probe=false"], env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    specs = kernelspecs(base, env)
    assert specs["agent"][0] == str(home / ".local" / "share" / "jupyter" / "kernels" / "agent"), specs
    assert specs["agent-code"][1]["argv"][0] == str(binary.resolve())
