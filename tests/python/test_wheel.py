"""The Python package: platform wheels holding the static binary, built
from the checkout for Linux x86_64 and aarch64 and macOS arm64 and x86_64
(scripts/wheel.sh --all, cross-compiled), and the sdist that refuses to
build where no wheel fits (Windows).

This machine's wheel is installed with pip into a virtual environment and
into --user: `agentkernel install --sys-prefix` from the environment's own
binary puts "Agent" and "Agent (code)" into that environment's Jupyter
(what JupyterLab's launcher lists), and `python -m agentkernel` runs the
binary. The Linux aarch64 wheel runs under qemu-user (Debian's
qemu-user-static, installed when missing): its binary in a venv installs
the pair there and serves a kernel_info and a cell, its backing kernel this
machine's python. The macOS wheels' binaries are checked by their Mach-O
headers (CPU, minimum macOS, code signature), and the code is checked to
build for macOS (go vet, go test -c).

The wheels come from the session's `wheels` fixture (conftest.py):
$AGENTKERNEL_WHEELS names a directory of them built already. The installs
run on both Python stacks, the rest once.
"""

import json
import os
import shutil
import struct
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from conftest import GO, WHEEL_PLATFORMS
from kclient import run_cell
from stack import MODERN

REPO = Path(__file__).resolve().parents[2]
# What does not depend on the Python stack runs in one of the two runs.
ONCE = pytest.mark.skipif(MODERN, reason="runs once, with Debian's stack")

# Each platform's wheel tags (as in its file name and WHEEL file), the
# binary's format and CPU.
TAGS = {
    "linux-x86_64": ["manylinux_2_17_x86_64", "manylinux2014_x86_64", "musllinux_1_1_x86_64"],
    "linux-aarch64": ["manylinux_2_17_aarch64", "manylinux2014_aarch64", "musllinux_1_1_aarch64"],
    "macos-arm64": ["macosx_12_0_arm64"],
    "macos-x86_64": ["macosx_12_0_x86_64"],
}
EM_X86_64, EM_AARCH64 = 62, 183
CPU_TYPE_X86_64, CPU_TYPE_ARM64 = 0x01000007, 0x0100000C
BINARY = {
    "linux-x86_64": ("elf", EM_X86_64),
    "linux-aarch64": ("elf", EM_AARCH64),
    "macos-arm64": ("macho", CPU_TYPE_ARM64),
    "macos-x86_64": ("macho", CPU_TYPE_X86_64),
}
# The packages whose code differs by GOOS (build tags, syscall): their
# tests must link for macOS too.
DARWIN_TEST_PACKAGES = ["./kernel/...", "./internal/zmtp", "./internal/procguard", "./checkpoint", "./backing",
                        "./store", "./cmd/agentkernel"]


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


def binary_of(wheel):
    with zipfile.ZipFile(wheel) as z:
        info = [i for i in z.infolist() if i.filename.endswith(".data/scripts/agentkernel")]
        assert len(info) == 1, z.namelist()
        assert (info[0].external_attr >> 16) & 0o111, "the binary is not executable"
        return z.read(info[0])


def elf(b):
    """(machine, static) of a 64-bit little-endian ELF executable."""
    assert b[:4] == b"\x7fELF" and b[4] == 2 and b[5] == 1, b[:8]
    machine = struct.unpack_from("<H", b, 18)[0]
    phoff, = struct.unpack_from("<Q", b, 32)
    phentsize, phnum = struct.unpack_from("<HH", b, 54)
    types = [struct.unpack_from("<I", b, phoff + i * phentsize)[0] for i in range(phnum)]
    return machine, 3 not in types  # PT_INTERP: a dynamic loader


def macho(b):
    """(cputype, filetype, minimum macOS as (major, minor), code signed) of a 64-bit Mach-O."""
    magic, cputype, _, filetype, ncmds, _, _, _ = struct.unpack_from("<IiiIIIII", b, 0)
    assert magic == 0xFEEDFACF, hex(magic)
    off, minos, signed = 32, None, False
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", b, off)
        if cmd == 0x32:  # LC_BUILD_VERSION: platform, minos (xxxx.yy.zz)
            platform, v = struct.unpack_from("<II", b, off + 8)
            assert platform == 1, f"LC_BUILD_VERSION platform {platform}, not macOS"
            minos = (v >> 16, (v >> 8) & 0xFF)
        elif cmd == 0x24:  # LC_VERSION_MIN_MACOSX, older linkers'
            v, = struct.unpack_from("<I", b, off + 8)
            minos = (v >> 16, (v >> 8) & 0xFF)
        elif cmd == 0x1D:  # LC_CODE_SIGNATURE
            signed = True
        off += size
    return cputype, filetype, minos, signed


@ONCE
def test_platform_wheels(wheels):
    """Each wheel: the platform tags in its name and WHEEL file, the same
    package and extension, and a binary for its platform — a static ELF for
    Linux, a Mach-O executable for macOS whose minimum macOS is the tag's,
    ad-hoc signed on arm64 (macOS kills unsigned arm64 code)."""
    contents = {}
    for name in WHEEL_PLATFORMS:
        whl = wheels[name]
        version = whl.name.split("-")[1]
        assert whl.name == f"agentkernel-{version}-py3-none-{'.'.join(TAGS[name])}.whl", whl.name
        with zipfile.ZipFile(whl) as z:
            meta = z.read(f"agentkernel-{version}.dist-info/WHEEL").decode()
            contents[name] = sorted(n for n in z.namelist() if "/scripts/" not in n and not n.endswith("RECORD")
                                    and not n.endswith("/WHEEL"))
        tags = sorted(line.split(": ", 1)[1] for line in meta.splitlines() if line.startswith("Tag: "))
        assert tags == sorted(f"py3-none-{t}" for t in TAGS[name]), meta
        assert "Root-Is-Purelib: false" in meta, meta

        b = binary_of(whl)
        kind, cpu = BINARY[name]
        if kind == "elf":
            machine, static = elf(b)
            assert machine == cpu, f"{name}: ELF machine {machine}"
            assert static, f"{name}: the binary has a dynamic loader (PT_INTERP): cgo crept in"
        else:
            cputype, filetype, minos, signed = macho(b)
            assert cputype == cpu, f"{name}: Mach-O cputype {cputype:#x}"
            assert filetype == 2, f"{name}: not an executable (MH_EXECUTE), filetype {filetype}"
            tag_min = tuple(int(x) for x in TAGS[name][0].split("_")[1:3])
            assert minos == tag_min, f"{name}: the binary needs macOS {minos}, its tag says {tag_min}"
            if cpu == CPU_TYPE_ARM64:
                assert signed, f"{name}: no code signature (LC_CODE_SIGNATURE)"
    first = contents["linux-x86_64"]
    for name, c in contents.items():
        assert c == first, f"{name} holds other files than linux-x86_64's"
    for want in ("agentkernel/__init__.py", "agentkernel/__main__.py", "agentkernel/persona.py", "agentkernel/avatar.svg"):
        assert want in first, first
    assert any("share/jupyter/labextensions/@agentkernel/jupyterlab/package.json" in n for n in first), first
    version = wheels["linux-x86_64"].name.split("-")[1]
    eps = zipfile.ZipFile(wheels["linux-x86_64"]).read(f"agentkernel-{version}.dist-info/entry_points.txt").decode()
    assert "[jupyter_ai.personas]" in eps and "agentkernel.persona:AgentKernelPersona" in eps, eps


# What pip picks among the wheels for a platform tag (pip download
# --platform, no index but the wheels' directory; pip widens a macOS tag to
# older macOS as it does on a Mac, a Linux one it takes as it is): the
# platform's own wheel, or none — then pip tries the sdist, which refuses
# (test_sdist_refuses_to_build).
PICKS = [
    ("manylinux_2_17_x86_64", "linux-x86_64"),
    ("manylinux2014_x86_64", "linux-x86_64"),  # pip < 20.3's name
    ("musllinux_1_1_x86_64", "linux-x86_64"),
    ("manylinux_2_17_aarch64", "linux-aarch64"),
    ("musllinux_1_1_aarch64", "linux-aarch64"),
    ("macosx_14_0_arm64", "macos-arm64"),  # pip takes macOS 12's on 14
    ("macosx_13_0_x86_64", "macos-x86_64"),
    ("macosx_11_0_arm64", None),  # older than Go 1.26 runs on
    ("win_amd64", None),
    ("linux_ppc64le", None),
]


@ONCE
@pytest.mark.parametrize("platform,want", PICKS, ids=[p for p, _ in PICKS])
def test_pip_picks_the_platform_wheel(wheels, tmp_path, platform, want):
    find = tmp_path / "index"
    find.mkdir()
    for f in wheels.values():
        shutil.copy(f, find)
    out = tmp_path / "out"
    proc = subprocess.run([sys.base_prefix + "/bin/python3", "-m", "pip", "download", "--no-index", "--find-links",
                           str(find), "--dest", str(out), "--no-deps", "--only-binary=:all:", "--platform", platform,
                           "--python-version", "3.11", "--implementation", "cp", "agentkernel"],
                          capture_output=True, text=True, timeout=120)
    if proc.returncode != 0 and "No module named pip" in proc.stderr:
        pytest.skip("Debian's python3 has no pip (python3-pip)")
    if want is None:
        assert proc.returncode != 0 and "No matching distribution" in proc.stderr, proc.stdout + proc.stderr
    else:
        assert proc.returncode == 0, proc.stderr
        assert [p.name for p in out.iterdir()] == [wheels[want].name]


@ONCE
def test_sdist_refuses_to_build(wheels, tmp_path):
    """The sdist holds the package and the build hook, no Go: building a
    wheel from it (what pip does where no wheel fits) stops with what to do
    instead; on Windows, that it does not run there and WSL 2 does."""
    with tarfile.open(wheels["sdist"]) as t:
        names = [n.split("/", 1)[1] for n in t.getnames() if "/" in n]
    assert "hatch_build.py" in names and "agentkernel/persona.py" in names, names
    assert not [n for n in names if n.endswith(".go") or n.startswith("labextension")], names
    build = subprocess.run([str(REPO / "scripts" / "modern-venv.sh"), "build"], capture_output=True, text=True,
                           timeout=900)
    assert build.returncode == 0, build.stderr
    python = build.stdout.strip()
    proc = subprocess.run([python, "-m", "pip", "wheel", "--no-deps", "--no-index", "--no-build-isolation",
                           "--wheel-dir", str(tmp_path), str(wheels["sdist"])], capture_output=True, text=True,
                          timeout=300, env=clean_env())
    assert proc.returncode != 0, proc.stdout
    assert "pip took no agentkernel wheel for this linux" in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    src = tmp_path / "src"
    with tarfile.open(wheels["sdist"]) as t:
        t.extractall(src)
    hook = next(src.glob("*/hatch_build.py"))
    probe = ("import sys; sys.path.insert(0, sys.argv[1]); import hatch_build as h; "
             "print(h.unsupported('win32', 'AMD64')); print(h.unsupported('freebsd14', 'amd64'))")
    out = subprocess.run([python, "-c", probe, str(hook.parent)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    windows, freebsd = out.stdout.splitlines()
    assert "does not run on Windows" in windows and "WSL 2" in windows, windows
    assert "no wheel for freebsd14 amd64" in freebsd, freebsd


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

    # Without Jupyter AI, nothing of the persona is imported: `import
    # agentkernel` does not read it, and only Jupyter AI's persona manager
    # loads the jupyter_ai.personas entry point.
    probe = ("import sys, agentkernel\n"
             "from importlib.metadata import entry_points\n"
             "eps = entry_points()\n"
             "eps = eps.select(group='jupyter_ai.personas') if hasattr(eps, 'select') else eps.get('jupyter_ai.personas', [])\n"
             "assert [e.value for e in eps] == ['agentkernel.persona:AgentKernelPersona'], eps\n"
             "assert 'agentkernel.persona' not in sys.modules and 'jupyter_ai_persona_manager' not in sys.modules\n"
             "print('ok')\n")
    out = subprocess.run([py, "-c", probe], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out


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


# -- Linux aarch64 under qemu-user --------------------------------------------

@pytest.fixture(scope="module")
def qemu_aarch64():
    """Debian's qemu-aarch64-static, installed with apt-get when missing (as
    scripts/deps.sh installs it)."""
    qemu = shutil.which("qemu-aarch64-static")
    if qemu is None:
        sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        for cmd in (["apt-get", "install", "-y", "-qq", "--no-install-recommends", "qemu-user-static"],
                    ["apt-get", "update", "-qq"],
                    ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "qemu-user-static"]):
            proc = subprocess.run(sudo + cmd, env=env, capture_output=True, text=True, timeout=900)
            if proc.returncode == 0 and cmd[1] == "install":
                break
        qemu = shutil.which("qemu-aarch64-static")
        assert qemu, f"qemu-user-static could not be installed: {proc.stderr[-2000:]}"
    return qemu


@ONCE
def test_aarch64_wheel_under_qemu(wheels, qemu_aarch64, tmp_path):
    """The aarch64 wheel's binary, run by qemu-user: its version, `install
    --sys-prefix` into the venv it was installed in, and a kernel from that
    kernelspec answering kernel_info and running a cell in code mode. pip
    here installs only this machine's wheels, so it lays the aarch64 one out
    with --target --platform (what pip on an ARM server does) and the files
    go where a venv install puts them. The backing kernel is this machine's
    python (an x86_64 ipykernel started by the emulated binary): on an ARM
    server it is the server's own."""
    whl = wheels["linux-aarch64"]
    venv = tmp_path / "venv"
    subprocess.run([sys.base_prefix + "/bin/python3", "-m", "venv", "--system-site-packages", str(venv)],
                   check=True, timeout=120)
    py = str(venv / "bin" / "python")
    home = tmp_path / "home"
    home.mkdir()
    env = clean_env(HOME=str(home))
    target = tmp_path / "target"
    proc = subprocess.run([py, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--only-binary=:all:",
                           "--platform", "manylinux_2_17_aarch64", "--target", str(target), str(whl)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    site = Path(subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               capture_output=True, text=True, check=True).stdout.strip())
    shutil.move(str(target / "bin" / "agentkernel"), venv / "bin" / "agentkernel")
    shutil.copytree(target / "share", venv / "share", dirs_exist_ok=True)
    for p in target.iterdir():
        if p.name not in ("bin", "share"):
            shutil.move(str(p), site / p.name)
    binary = venv / "bin" / "agentkernel"
    assert elf(binary.read_bytes()[:4096])[0] == EM_AARCH64

    out = subprocess.run([qemu_aarch64, str(binary), "version"], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.startswith("agentkernel 0."), out
    out = subprocess.run([qemu_aarch64, str(binary), "install", "--sys-prefix", "--probe=false"], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    specs = kernelspecs(py, env)
    resource, spec = specs["agent-code"]
    assert resource == str(venv / "share" / "jupyter" / "kernels" / "agent-code"), specs
    assert spec["argv"][0] == str(binary.resolve()), spec
    # No binfmt_misc here to run an aarch64 binary by itself: the
    # kernelspec runs it through qemu, as binfmt would.
    spec["argv"] = [qemu_aarch64] + spec["argv"]
    Path(resource, "kernel.json").write_text(json.dumps(spec))

    from jupyter_client import KernelManager
    from jupyter_client.kernelspec import KernelSpecManager

    km = KernelManager(kernel_name="agent-code",
                       kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(venv / "share" / "jupyter" / "kernels")]))
    km.start_kernel(env={**env, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime")}, cwd=str(tmp_path))
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=120)
        reply = kc.kernel_info(reply=True, timeout=60)
        assert reply["content"]["status"] == "ok", reply
        assert reply["content"]["implementation"] == "agentkernel", reply["content"]
        status, msgs = run_cell(kc, "import platform; print(platform.machine(), 6 * 7)", timeout=120)
        assert status == "ok", msgs
        printed = "".join(m["content"]["text"] for m in msgs if m["msg_type"] == "stream")
        assert printed.split() == [os.uname().machine, "42"], msgs
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=False)


# -- macOS: the code builds there ----------------------------------------------

@ONCE
@pytest.mark.parametrize("goarch", ["arm64", "amd64"])
def test_darwin_builds(goarch, tmp_path):
    """go vet ./... for macOS (the tests' code too), and the tests of the
    packages whose code differs by OS link for macOS (go test -c)."""
    go = GO if Path(GO).exists() else shutil.which("go")
    env = {**os.environ, "GOOS": "darwin", "GOARCH": goarch, "CGO_ENABLED": "0"}
    vet = subprocess.run([go, "vet", "-trimpath", "./..."], cwd=REPO, env=env, capture_output=True, text=True,
                         timeout=1800)
    assert vet.returncode == 0, vet.stderr[-4000:]
    if goarch != "arm64":
        return  # one architecture links; vet has checked both
    built = subprocess.run([go, "test", "-c", "-trimpath", "-o", str(tmp_path), *DARWIN_TEST_PACKAGES], cwd=REPO,
                           env=env, capture_output=True, text=True, timeout=1800)
    assert built.returncode == 0, built.stderr[-4000:]
    for test in tmp_path.glob("*.test"):
        cputype, filetype, _, _ = macho(test.read_bytes()[:65536])
        assert cputype == CPU_TYPE_ARM64 and filetype == 2, test
