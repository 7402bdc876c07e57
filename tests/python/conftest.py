"""Session set-up for the Python-side tests of agentkernel.

Builds bin/agentkernel (or uses $AGENTKERNEL_BIN), installs two kernelspecs
into a temporary prefix and points JUPYTER_PATH at it for the whole session:

* ``agentkernel-test``         code mode, python3 backing, interrupt_mode "message"
* ``agentkernel-test-signal``  the same, but interrupt_mode "signal"

The code-mode protocol suites and the prompt-mode end-to-end suite run with
both backings: ``local`` (the backing ipykernel is agentkernel's child) and
``gateway`` (it runs on a real Jupyter server, Debian's Notebook, started once
per session with a token on 127.0.0.1; see ``jupyter_server``). The gateway
twins of the two kernelspecs above are ``agentkernel-test-gw`` and
``agentkernel-test-signal-gw``; tests reach them through the ``backing``
fixture or ``backing_for``.

IPYTHONDIR and JUPYTER_RUNTIME_DIR are also pointed at temporary directories
so that the user's IPython profile and history never leak into the results.

Run with Debian's interpreter:  /usr/bin/python3 -m pytest tests/python -q
or on the PyPI stack:           $(scripts/modern-venv.sh) -m pytest tests/python -q
(see stack.py: there the venv's ipykernel 7 is the backing kernel and
jupyter_server 2 the gateway server).
"""

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

from kclient import describe, descendants
from stack import MODERN, PYTHON, VENV_DATA

REPO = Path(__file__).resolve().parents[2]
GO = os.environ.get("GO", "/usr/local/go/bin/go")

KERNEL = "agentkernel-test"
KERNEL_SIGNAL = "agentkernel-test-signal"
GATEWAY_SUFFIX = "-gw"
KERNEL_GW = KERNEL + GATEWAY_SUFFIX
KERNEL_SIGNAL_GW = KERNEL_SIGNAL + GATEWAY_SUFFIX
BACKINGS = ["local", "gateway"]


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


def _install(binary, prefix, name, display, extra=(), signal=False):
    cmd = [
        str(binary), "install",
        "--prefix", str(prefix),
        "--name", name,
        "--display-name", display,
        "--backing", "python3",
        "--mode", "code",
        *extra,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.exit(f"{' '.join(cmd)} failed:\n{proc.stdout}{proc.stderr}", returncode=2)
    spec = prefix / "share" / "jupyter" / "kernels" / name / "kernel.json"
    if not spec.is_file():
        pytest.exit(f"install did not write {spec}", returncode=2)
    if signal:
        js = json.loads(spec.read_text())
        js["interrupt_mode"] = "signal"
        spec.write_text(json.dumps(js, indent=1))
    return spec


@pytest.fixture(scope="session", autouse=True)
def agentkernel_env(tmp_path_factory):
    """Build, install both kernelspecs, and export JUPYTER_PATH for the session."""
    tmp = tmp_path_factory.mktemp("agentkernel")
    binary = _build()
    prefix = tmp / "prefix"
    _install(binary, prefix, KERNEL, "Agent (test)")
    _install(binary, prefix, KERNEL_SIGNAL, "Agent (test, signal)", signal=True)

    saved = {k: os.environ.get(k) for k in ("JUPYTER_PATH", "IPYTHONDIR", "JUPYTER_RUNTIME_DIR")}
    data = str(prefix / "share" / "jupyter")
    # On the PyPI stack the venv's kernelspecs (pip's ipykernel as python3)
    # come next, as the venv's Jupyter sees them.
    os.environ["JUPYTER_PATH"] = os.pathsep.join(filter(None, [data, VENV_DATA, saved["JUPYTER_PATH"]]))
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


# -- the Jupyter server that gateway backings run on -------------------------

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class JupyterServer:
    """A Jupyter server on 127.0.0.1 with a token: Debian's Notebook 6, or on
    the PyPI stack jupyter_server 2 (what Notebook 7 and JupyterLab 4 run on).

    It serves the kernels REST and WebSocket API that Kernel Gateway and
    Enterprise Gateway serve; ``api`` talks to it, ``kernels`` lists the ids
    of the kernels it runs.
    """

    def __init__(self, root):
        self.token = uuid.uuid4().hex
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = root / "server.log"
        if MODERN:
            cmd = [PYTHON, "-m", "jupyter_server", "--no-browser", "--ip=127.0.0.1", f"--port={self.port}",
                   f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={root}"]
        else:
            cmd = ["/usr/bin/python3", "-m", "notebook", "--no-browser", "--ip=127.0.0.1",
                   f"--port={self.port}", f"--NotebookApp.token={self.token}", f"--notebook-dir={root}",
                   "--NotebookApp.open_browser=False"]
        if os.geteuid() == 0:
            cmd.append("--allow-root")
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True)
        try:
            deadline = time.time() + 60
            while True:
                try:
                    self.api("GET", "/api")
                    break
                except OSError:
                    if self.proc.poll() is not None or time.time() > deadline:
                        raise RuntimeError("notebook server did not start:\n" + self.log_path.read_text())
                    time.sleep(0.2)
        except BaseException:
            self.close()
            raise

    def api(self, method, path, body=None):
        req = urllib.request.Request(
            self.url + path, method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=30) as r:
            data = r.read()
            return json.loads(data) if data else None

    def kernels(self):
        return {k["id"] for k in self.api("GET", "/api/kernels")}

    def wait_gone(self, ids, timeout=10.0):
        """Wait until the server runs none of ids; return those still there."""
        deadline = time.monotonic() + timeout
        while (left := self.kernels() & set(ids)) and time.monotonic() < deadline:
            time.sleep(0.1)
        return left

    def close(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, 15)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
                self.proc.wait()
        self._log.close()


@pytest.fixture(scope="session")
def jupyter_server(agentkernel_env, tmp_path_factory):
    """One Notebook server for the session, started on first use.

    It sees the session's JUPYTER_PATH (so it lists agentkernel's test
    kernelspecs), and JUPYTER_GATEWAY_AUTH_TOKEN holds its token while it
    runs, as where Jupyter runs a gateway kernelspec. At the end no kernel
    may be left on it: every agentkernel deletes its server kernel when it
    shuts down.
    """
    server = JupyterServer(tmp_path_factory.mktemp("jupyter-server"))
    saved = os.environ.get("JUPYTER_GATEWAY_AUTH_TOKEN")
    os.environ["JUPYTER_GATEWAY_AUTH_TOKEN"] = server.token
    try:
        yield server
        left = server.wait_gone(server.kernels())
        assert not left, f"kernels left on the Jupyter server: {sorted(left)}"
    finally:
        if saved is None:
            os.environ.pop("JUPYTER_GATEWAY_AUTH_TOKEN", None)
        else:
            os.environ["JUPYTER_GATEWAY_AUTH_TOKEN"] = saved
        server.close()


class Backing:
    """Where the backing kernels of the agentkernel kernels under test run.

    ``local``: as children of agentkernel. ``gateway``: on ``server``.
    """

    def __init__(self, name, server=None):
        self.name, self.server = name, server

    @property
    def gateway(self):
        return self.server is not None

    def spec(self, name):
        """The kernelspec name of a test kernelspec for this backing."""
        return name + GATEWAY_SUFFIX if self.gateway else name

    def install_args(self):
        """Extra arguments for `agentkernel install`."""
        return ["--gateway-url", self.server.url] if self.gateway else []

    def check_where_code_runs(self, agent_pid, where):
        """The backing kernel that printed ``where`` (the output of WHERE) is
        where this backing puts it: under agentkernel (local) or in the
        server's /api/kernels and not under agentkernel (gateway). Returns
        its pid and, for gateway, its server kernel id."""
        pid, connection_file = where.split()
        pid, tree = int(pid), descendants(agent_pid)
        if not self.gateway:
            assert pid in tree, f"the code runs in pid {pid}, not under kernel {agent_pid}:{describe(tree)}"
            return pid, None
        assert pid not in tree, f"the code runs in agentkernel's child {pid}, not on the server"
        name = Path(connection_file).name
        assert name.startswith("kernel-") and name.endswith(".json"), connection_file
        kid = name[len("kernel-"):-len(".json")]
        assert kid in self.server.kernels(), f"kernel {kid} is not in the server's /api/kernels"
        return pid, kid


# What a backing kernel (ipykernel) prints to say where it is: its pid and
# connection file (kernel-ID.json under a Jupyter server).
WHERE = "import os, ipykernel; print(os.getpid(), ipykernel.get_connection_file())"


@pytest.fixture(scope="session")
def gateway(agentkernel_env, jupyter_server):
    """The gateway backing, with the gateway twins of the test kernelspecs installed."""
    env = agentkernel_env
    extra = ["--gateway-url", jupyter_server.url]
    _install(env["binary"], env["prefix"], KERNEL_GW, "Agent (test, gateway)", extra)
    _install(env["binary"], env["prefix"], KERNEL_SIGNAL_GW, "Agent (test, signal, gateway)", extra, signal=True)
    return Backing("gateway", jupyter_server)


def backing_for(request, spec):
    """The Backing of a test kernelspec, starting the server for a gateway one."""
    if spec.endswith(GATEWAY_SUFFIX):
        return request.getfixturevalue("gateway")
    return Backing("local")


@pytest.fixture(params=BACKINGS)
def backing(request):
    """Each test that takes it runs twice: with local and with gateway backing."""
    if request.param == "gateway":
        return request.getfixturevalue("gateway")
    return Backing("local")


# -- the wheels ---------------------------------------------------------------

# The wheel of each platform scripts/wheel.sh builds, by the tags its name
# carries (test_wheel.py checks each wheel's tags in full).
WHEEL_PLATFORMS = {
    "linux-x86_64": "-manylinux_2_17_x86_64.",
    "linux-aarch64": "-manylinux_2_17_aarch64.",
    "macos-arm64": "-macosx_12_0_arm64.",
    "macos-x86_64": "-macosx_12_0_x86_64.",
}


@pytest.fixture(scope="session")
def wheels(tmp_path_factory):
    """Every platform's wheel and the sdist, by platform ("sdist" for the
    sdist): the files in $AGENTKERNEL_WHEELS (make test builds them once for
    both Python runs), or scripts/wheel.sh --all, once for the session."""
    given = os.environ.get("AGENTKERNEL_WHEELS")
    if given:
        files = sorted(Path(given).iterdir())
    else:
        out = tmp_path_factory.mktemp("wheels")
        proc = subprocess.run([str(REPO / "scripts" / "wheel.sh"), "--all", "--outdir", str(out)],
                              capture_output=True, text=True, timeout=3600)
        assert proc.returncode == 0, proc.stderr[-4000:]
        files = [Path(line) for line in proc.stdout.split()]
    found = {}
    for f in files:
        if f.name.endswith(".tar.gz"):
            found["sdist"] = f
        for name, tag in WHEEL_PLATFORMS.items():
            if f.suffix == ".whl" and tag in f.name:
                found[name] = f
    missing = (set(WHEEL_PLATFORMS) | {"sdist"}) - set(found)
    assert not missing, f"no {sorted(missing)} among {[f.name for f in files]}"
    return found


@pytest.fixture(scope="session")
def wheel(wheels):
    """This machine's wheel."""
    machine = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}[os.uname().machine]
    return wheels["linux-" + machine]
