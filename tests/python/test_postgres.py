"""Sessions in PostgreSQL: several agentkernel processes share one database.

The server is real: $AGENTKERNEL_TEST_POSTGRES, or a throwaway cluster made
here with Debian's initdb (run as the postgres user when the tests run as
root), listening on 127.0.0.1 at a free port, removed at the end. Six `ask`
processes write at once; a seventh lists and searches and sees them all; no
SQLite file is written. An unreachable database is a clear error in the cell,
without the password, and the kernel keeps answering.
"""

import glob
import json
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
import uuid

import pytest
from jupyter_client import KernelManager

from kclient import run_cell
from test_prompt_e2e import text_of

TIMEOUT = 120


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pg_bin(name):
    found = shutil.which(name)
    if found:
        return found
    cands = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"),
                   key=lambda p: int(p.split("/")[4]), reverse=True)
    return cands[0] if cands else None


def _as_postgres():
    if os.geteuid() != 0:
        return None
    pw = pwd.getpwnam("postgres")

    def demote():
        os.setgid(pw.pw_gid)
        os.setuid(pw.pw_uid)
    return demote


def _psql(url, sql):
    subprocess.run([_pg_bin("psql"), url, "-v", "ON_ERROR_STOP=1", "-qc", sql],
                   check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def postgres():
    """The base URL of a PostgreSQL server (database postgres)."""
    if os.environ.get("AGENTKERNEL_TEST_POSTGRES"):
        yield os.environ["AGENTKERNEL_TEST_POSTGRES"]
        return
    initdb = _pg_bin("initdb")
    if not initdb:
        if os.environ.get("AGENTKERNEL_REQUIRE_POSTGRES"):
            pytest.fail("no PostgreSQL: install Debian's postgresql or set AGENTKERNEL_TEST_POSTGRES")
        pytest.skip("no PostgreSQL")
    d = tempfile.mkdtemp(prefix="agentkernel-pg-")
    demote = _as_postgres()
    if demote:
        pw = pwd.getpwnam("postgres")
        os.chown(d, pw.pw_uid, pw.pw_gid)
    data = os.path.join(d, "data")
    subprocess.run([initdb, "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"],
                   check=True, capture_output=True, preexec_fn=demote, cwd=d, timeout=120)
    port = _free_port()
    log = open(os.path.join(d, "postgres.log"), "w")
    proc = subprocess.Popen([os.path.join(os.path.dirname(initdb), "postgres"), "-D", data, "-k", d,
                             "-h", "127.0.0.1", "-p", str(port), "-c", "max_connections=200"],
                            stdout=log, stderr=log, preexec_fn=demote, cwd=d)
    url = f"postgres://postgres@127.0.0.1:{port}/postgres?sslmode=disable"
    try:
        deadline = time.time() + 30
        while True:
            if proc.poll() is not None:
                pytest.fail("postgres exited: " + open(os.path.join(d, "postgres.log")).read())
            if subprocess.run([_pg_bin("pg_isready"), "-h", "127.0.0.1", "-p", str(port)],
                              capture_output=True).returncode == 0:
                break
            assert time.time() < deadline, "postgres did not start"
            time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def database(postgres, agentkernel_env):
    """A fresh database on the server, set up by `agentkernel store init` as the superuser; its URL as
    a user of the store (a login role of its own, a member of agentkernel_user), as a kernel gets it."""
    name = "ak_" + uuid.uuid4().hex[:12]
    _psql(postgres, f"CREATE DATABASE {name}")
    admin = postgres.replace("/postgres?", f"/{name}?")
    subprocess.run([str(agentkernel_env["binary"]), "store", "init", "--admin-url", admin],
                   check=True, capture_output=True, timeout=TIMEOUT)
    role = "u_" + name
    _psql(postgres, f"CREATE ROLE {role} LOGIN IN ROLE agentkernel_user")
    yield admin.replace("postgres@", f"{role}@", 1)
    _psql(postgres, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    _psql(postgres, f"DROP ROLE IF EXISTS {role}")


def _env(agentkernel_env, tmp_path, store):
    e = {k: v for k, v in os.environ.items() if not k.startswith("AGENTKERNEL_")}
    e.update({"AGENTKERNEL_STORE": store, "AGENTKERNEL_DATA_DIR": str(tmp_path / "data"),
              "XDG_CONFIG_HOME": str(tmp_path / "config")})
    jp = str(agentkernel_env["prefix"] / "share" / "jupyter")
    e["JUPYTER_PATH"] = os.pathsep.join(filter(None, [jp, os.environ.get("JUPYTER_PATH")]))
    return e


def _sqlite_files(root):
    return [p for p in glob.glob(str(root) + "/**/*", recursive=True)
            if p.endswith((".db", ".db-wal", ".db-shm", ".sqlite"))]


def test_six_concurrent_asks_and_a_seventh_reader(agentkernel_env, model, tmp_path, database):
    binary = str(agentkernel_env["binary"])
    env = _env(agentkernel_env, tmp_path, database)
    n = 6
    model.enqueue(*[{"steps": [{"text": ["Done ", "here."]}, {"usage": {"input": 10, "output": 2}}]}
                    for _ in range(n)])
    procs = [subprocess.Popen([binary, "ask", "--model", "openai:gpt-4.1", "--approve", "none",
                               "--output-format", "json", f"Question {k} about topic{k}word please"],
                              env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
             for k in range(n)]
    ids = {}
    for k, p in enumerate(procs):
        out, err = p.communicate(timeout=TIMEOUT)
        assert p.returncode == 0, err
        res = json.loads(out)
        assert res["result"].strip() == "Done here.", res
        ids[k] = res["session_id"]
    assert len(set(ids.values())) == n

    # The seventh process: every session, every title, every message.
    ls = subprocess.run([binary, "sessions", "list", "--json"], env=env, capture_output=True, text=True,
                        timeout=TIMEOUT)
    assert ls.returncode == 0, ls.stderr
    listed = {s["id"]: s for s in json.loads(ls.stdout)}
    assert set(listed) == set(ids.values())
    for k, sid in ids.items():
        assert f"Question {k} about topic{k}word" in listed[sid]["title"], listed[sid]
        hits = subprocess.run([binary, "sessions", "search", "--json", f"topic{k}word"], env=env,
                              capture_output=True, text=True, timeout=TIMEOUT)
        assert hits.returncode == 0, hits.stderr
        found = json.loads(hits.stdout)
        assert {h["session_id"] for h in found} == {sid}, found
        assert any("**topic" in h["snippet"] for h in found), found
        show = subprocess.run([binary, "sessions", "show", sid], env=env, capture_output=True, text=True,
                              timeout=TIMEOUT)
        assert show.returncode == 0 and "Done here." in show.stdout, show.stdout + show.stderr
    assert not _sqlite_files(tmp_path), _sqlite_files(tmp_path)


def test_unreachable_store_is_a_clear_error_and_the_kernel_answers(agentkernel_env, model, tmp_path):
    binary = str(agentkernel_env["binary"])
    subprocess.run([binary, "install", "--prefix", str(agentkernel_env["prefix"]), "--name", "agent-pg-down",
                    "--mode", "prompt", "--model", "openai:gpt-4.1", "--approve", "all", "--probe=false"],
                   check=True, capture_output=True)
    port = _free_port()  # nothing listens there
    env = _env(agentkernel_env, tmp_path, f"postgres://ak:s3cret-pw@127.0.0.1:{port}/sessions")
    km = KernelManager(kernel_name="agent-pg-down")
    km.start_kernel(env=env)
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=TIMEOUT)

        def run(code):
            status, msgs = run_cell(kc, code, TIMEOUT)
            return status, text_of(msgs)

        status, out = run("Hello?")
        assert status == "error", out
        assert "cannot reach the database" in out and f"127.0.0.1:{port}" in out, out
        assert "s3cret" not in out
        # The kernel still answers: kernel_info, and a code cell in the backing kernel.
        kc.kernel_info()
        assert kc.get_shell_msg(timeout=TIMEOUT)["content"]["status"] == "ok"
        status, out = run("%%code\nprint(6 * 7)")
        assert status == "ok" and "42" in out, out
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    assert not _sqlite_files(tmp_path), _sqlite_files(tmp_path)
