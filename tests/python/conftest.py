"""Session set-up for the Python-side tests of agentkernel.

Builds bin/agentkernel (or uses $AGENTKERNEL_BIN), installs two kernelspecs
into a temporary prefix and points JUPYTER_PATH at it for the whole session:

* ``agentkernel-test``         code mode, python3 backing, interrupt_mode "message"
* ``agentkernel-test-signal``  the same, but interrupt_mode "signal"

IPYTHONDIR and JUPYTER_RUNTIME_DIR are also pointed at temporary directories
so that the user's IPython profile and history never leak into the results.

Run with Debian's interpreter:  /usr/bin/python3 -m pytest tests/python -q
"""

import json
import os
import shutil
import subprocess
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
GO = os.environ.get("GO", "/usr/local/go/bin/go")

KERNEL = "agentkernel-test"
KERNEL_SIGNAL = "agentkernel-test-signal"


def _build():
    """Return the path of the agentkernel binary, building it unless AGENTKERNEL_BIN is set."""
    env_bin = os.environ.get("AGENTKERNEL_BIN")
    if env_bin:
        path = Path(env_bin).resolve()
        if not path.is_file():
            pytest.exit(f"AGENTKERNEL_BIN={env_bin} does not exist", returncode=2)
        return path
    out = REPO / "bin" / "agentkernel"
    go = GO if Path(GO).exists() else shutil.which("go")
    if not go:
        pytest.exit("go not found (set GO or AGENTKERNEL_BIN)", returncode=2)
    proc = subprocess.run(
        [go, "build", "-trimpath", "-o", str(out), "./cmd/agentkernel"],  # as make build
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "CGO_ENABLED": "0"},
    )
    if proc.returncode != 0:
        pytest.exit(
            "go build ./cmd/agentkernel failed:\n" + proc.stdout + proc.stderr, returncode=2
        )
    return out


def _install(binary, prefix, name, display):
    cmd = [
        str(binary), "install",
        "--prefix", str(prefix),
        "--name", name,
        "--display-name", display,
        "--backing", "python3",
        "--mode", "code",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.exit(f"{' '.join(cmd)} failed:\n{proc.stdout}{proc.stderr}", returncode=2)
    spec = prefix / "share" / "jupyter" / "kernels" / name / "kernel.json"
    if not spec.is_file():
        pytest.exit(f"install did not write {spec}", returncode=2)
    return spec


@pytest.fixture(scope="session", autouse=True)
def agentkernel_env(tmp_path_factory):
    """Build, install both kernelspecs, and export JUPYTER_PATH for the session."""
    tmp = tmp_path_factory.mktemp("agentkernel")
    binary = _build()
    prefix = tmp / "prefix"
    _install(binary, prefix, KERNEL, "Agent (test)")
    sig = _install(binary, prefix, KERNEL_SIGNAL, "Agent (test, signal)")
    spec = json.loads(sig.read_text())
    spec["interrupt_mode"] = "signal"
    sig.write_text(json.dumps(spec, indent=1))

    saved = {k: os.environ.get(k) for k in ("JUPYTER_PATH", "IPYTHONDIR", "JUPYTER_RUNTIME_DIR")}
    data = str(prefix / "share" / "jupyter")
    os.environ["JUPYTER_PATH"] = os.pathsep.join(filter(None, [data, saved["JUPYTER_PATH"]]))
    os.environ["IPYTHONDIR"] = str(tmp / "ipython")
    os.environ["JUPYTER_RUNTIME_DIR"] = str(tmp / "runtime")
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # quiet ipykernel's debugger
    (tmp / "runtime").mkdir()
    yield {"binary": binary, "prefix": prefix, "tmp": tmp}
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


class Model:
    """A scripted model server process."""

    def __init__(self, binary):
        self.proc = subprocess.Popen([str(binary)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.url = self.proc.stdout.readline().strip()
        assert self.url.startswith("http://127.0.0.1:"), self.url

    def enqueue(self, *turns):
        req = urllib.request.Request(self.url + "/_enqueue", data=json.dumps(list(turns)).encode(), method="POST")
        urllib.request.urlopen(req, timeout=10).read()

    def requests(self):
        return json.loads(urllib.request.urlopen(self.url + "/_requests", timeout=10).read() or b"null") or []

    def pending(self):
        return int(urllib.request.urlopen(self.url + "/_pending", timeout=10).read())

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


@pytest.fixture(scope="module")
def model(agentkernel_env, tmp_path_factory):
    binary = tmp_path_factory.mktemp("bin") / "scriptedmodel"
    go = GO if Path(GO).exists() else shutil.which("go")
    subprocess.run([go, "build", "-o", str(binary), "./scripts/scriptedmodel"], cwd=REPO, check=True)
    m = Model(binary)
    data = tmp_path_factory.mktemp("data")
    saved = {k: os.environ.get(k) for k in
             ("OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "AGENTKERNEL_DATA_DIR")}
    os.environ.update({"OPENAI_BASE_URL": m.url + "/v1", "OPENAI_API_KEY": "sk-test-not-real",
                       "ANTHROPIC_BASE_URL": m.url, "ANTHROPIC_API_KEY": "sk-ant-test-not-real",
                       "AGENTKERNEL_DATA_DIR": str(data)})
    yield m
    m.close()
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
