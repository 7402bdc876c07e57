"""Builds the agentkernel binary into the wheel: a static Go binary (no cgo),
cross-compiled for the wheel's platform and installed as a script, and the
platform tags that say where it runs.

$AGENTKERNEL_WHEEL_PLATFORM names the platform (a key of PLATFORMS; default:
this machine's). scripts/wheel.sh builds them all.

The sdist carries no Go source: a platform with no wheel (Windows among
them) falls back to it, and this hook, which runs first, stops pip there
with a message that says why and what to do instead.
"""

import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

# Each platform: GOOS, GOARCH and the wheel's platform tags. A static Linux
# binary needs no libc, so glibc and musl systems alike (manylinux2014 is
# manylinux_2_17's older name, for pip < 20.3). Go 1.26 runs on macOS 12 and
# later, which the binary's LC_BUILD_VERSION says too.
PLATFORMS = {
    "linux-x86_64": ("linux", "amd64", "manylinux_2_17_x86_64.manylinux2014_x86_64.musllinux_1_1_x86_64"),
    "linux-aarch64": ("linux", "arm64", "manylinux_2_17_aarch64.manylinux2014_aarch64.musllinux_1_1_aarch64"),
    "macos-arm64": ("darwin", "arm64", "macosx_12_0_arm64"),
    "macos-x86_64": ("darwin", "amd64", "macosx_12_0_x86_64"),
}

# platform.machine()'s spellings of the architectures above.
MACHINES = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}


def host_platform(system=sys.platform, machine=None):
    """The PLATFORMS key of this machine, or None when there is no wheel for it."""
    arch = MACHINES.get((machine or platform.machine()).lower())
    if system.startswith("linux") and arch:
        return f"linux-{arch}"
    if system == "darwin" and arch:
        return "macos-arm64" if arch == "aarch64" else "macos-x86_64"
    return None


def unsupported(system=sys.platform, machine=None):
    """What pip prints where no wheel fits and it tries the sdist."""
    machine = machine or platform.machine()
    wheels = "Linux x86_64 and aarch64 (glibc or musl), macOS 12+ on arm64 and x86_64"
    if system in ("win32", "cygwin"):
        return ("agentkernel does not run on Windows: it manages kernels and the processes they start with Unix "
                "process groups and signals. Install it in WSL 2 (Windows Subsystem for Linux), where the Linux "
                f"wheel installs, and run JupyterLab there. Wheels exist for {wheels}.")
    if host_platform(system, machine):
        return (f"pip took no agentkernel wheel for this {system} {machine} machine: the wheels need a recent pip "
                f"(21.3 or later takes every one of them) and, on macOS, macOS 12 or later. Wheels exist for {wheels}. "
                "Upgrade pip, or build a wheel from a clone of the repository with `make wheel`.")
    return (f"agentkernel has no wheel for {system} {machine}. Wheels exist for {wheels}. Where Go runs, a wheel "
            "can be built from a clone of the repository (make wheel, with AGENTKERNEL_WHEEL_PLATFORM for another "
            "platform's).")


def repository(root):
    """The agentkernel repository this package is built from, or None (an sdist unpacked by pip)."""
    repo = Path(root).parent
    return repo if (repo / "cmd" / "agentkernel").is_dir() else None


class GoBinary(BuildHookInterface):
    def initialize(self, version, build_data):
        if self.target_name != "wheel":
            return
        repo = repository(self.root)
        if repo is None:  # pip's last resort: say why, without a traceback
            sys.stderr.write(f"\nERROR: {unsupported()}\n\n")
            raise SystemExit(1)
        name = os.environ.get("AGENTKERNEL_WHEEL_PLATFORM") or host_platform()
        if name not in PLATFORMS:
            raise RuntimeError(f"no wheel platform {name!r}: set AGENTKERNEL_WHEEL_PLATFORM to one of "
                               + ", ".join(PLATFORMS))
        goos, goarch, tag = PLATFORMS[name]
        go = os.environ.get("GO") or shutil.which("go") or "/usr/local/go/bin/go"
        self._tmp = tempfile.mkdtemp(prefix="agentkernel-wheel-")
        out = Path(self._tmp) / "agentkernel"
        env = {**os.environ, "CGO_ENABLED": "0", "GOOS": goos, "GOARCH": goarch}
        subprocess.run([go, "build", "-trimpath", "-ldflags", f"-s -w -X main.version={self.metadata.version}",
                        "-o", str(out), "./cmd/agentkernel"], cwd=repo, env=env, check=True)
        build_data["shared_scripts"][str(out)] = "agentkernel"
        build_data["pure_python"] = False
        build_data["tag"] = f"py3-none-{tag}"

    def finalize(self, version, build_data, artifact_path):
        tmp = getattr(self, "_tmp", None)
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
