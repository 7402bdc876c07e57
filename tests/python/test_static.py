"""The binary `make build` produces is static: it runs where there is nothing
else, no libc, no Python, no /proc — an empty chroot — and `version` and
`install` work there (install warns that the backing kernel is missing)."""

import json
import os
import shutil
import struct
import subprocess

import pytest

PT_DYNAMIC, PT_INTERP = 2, 3


def program_headers(path):
    """The p_type of every program header of a 64-bit little-endian ELF file."""
    with open(path, "rb") as f:
        ident = f.read(16)
        assert ident[:4] == b"\x7fELF" and ident[4] == 2 and ident[5] == 1, "not a 64-bit LE ELF"
        f.seek(0x20)
        (phoff,) = struct.unpack("<Q", f.read(8))
        f.seek(0x36)
        phentsize, phnum = struct.unpack("<HH", f.read(4))
        types = []
        for i in range(phnum):
            f.seek(phoff + i * phentsize)
            types.append(struct.unpack("<I", f.read(4))[0])
        return types


def test_binary_is_statically_linked(agentkernel_env):
    types = program_headers(agentkernel_env["binary"])
    assert PT_INTERP not in types, "the binary asks for a dynamic loader"
    assert PT_DYNAMIC not in types, "the binary has dynamic sections"


def _chroot_cmd():
    chroot = shutil.which("chroot") or "/usr/sbin/chroot"
    if os.geteuid() == 0:
        return [chroot]
    if shutil.which("unshare"):
        return [shutil.which("unshare"), "-r", chroot]
    pytest.skip("needs root or unshare -r for a chroot")


def test_runs_alone_in_an_empty_root(agentkernel_env, tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    shutil.copy2(agentkernel_env["binary"], root / "agentkernel")
    env = {"HOME": "/", "PATH": "/nothing"}
    run = lambda *args: subprocess.run([*_chroot_cmd(), str(root), "/agentkernel", *args], env=env,
                                       capture_output=True, text=True, timeout=60)
    v = run("version")
    assert v.returncode == 0 and v.stdout.startswith("agentkernel "), v.stdout + v.stderr
    inst = run("install", "--prefix", "/k", "--name", "agent", "--probe=false")
    assert inst.returncode == 0, inst.stderr
    assert 'no backing kernel "python3" here yet' in inst.stderr
    spec = json.loads((root / "k/share/jupyter/kernels/agent/kernel.json").read_text())
    assert spec["argv"][0] == "/agentkernel" and spec["language"] == "python"
    assert spec["kernel_protocol_version"] == "5.5"
    assert sorted(p.name for p in root.iterdir()) == ["agentkernel", "k"]
