"""Builds the agentkernel binary into the wheel: a static Go binary (no cgo),
installed as a script, and a platform tag for it."""

import os
import platform
import shutil
import subprocess
from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

# GOARCH and the wheel platform tags of a static Linux binary: it needs no
# libc, so glibc and musl systems alike.
ARCHES = {
    "x86_64": ("amd64", "manylinux_2_17_x86_64.musllinux_1_1_x86_64"),
    "aarch64": ("arm64", "manylinux_2_17_aarch64.musllinux_1_1_aarch64"),
}


class CustomBuildHook(BuildHookInterface):
    def initialize(self, version, build_data):
        if self.target_name != "wheel":
            return
        repo = Path(self.root).parent
        if not (repo / "cmd" / "agentkernel").is_dir():
            raise RuntimeError("the wheel is built from the agentkernel repository (make wheel)")
        machine = os.environ.get("AGENTKERNEL_WHEEL_ARCH", platform.machine())
        if machine not in ARCHES:
            raise RuntimeError(f"no wheel for {machine}: build on x86_64 or aarch64 Linux")
        goarch, tag = ARCHES[machine]
        go = os.environ.get("GO") or shutil.which("go") or "/usr/local/go/bin/go"
        out = Path(self.directory) / "go-build" / "agentkernel"
        out.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "CGO_ENABLED": "0", "GOOS": "linux", "GOARCH": goarch}
        subprocess.run([go, "build", "-trimpath", "-ldflags", f"-s -w -X main.version={self.metadata.version}",
                        "-o", str(out), "./cmd/agentkernel"], cwd=repo, env=env, check=True)
        build_data["shared_scripts"][str(out)] = "agentkernel"
        build_data["pure_python"] = False
        build_data["tag"] = f"py3-none-{tag}"
