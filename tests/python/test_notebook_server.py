"""agentkernel under the real Jupyter Notebook server (Debian's notebook 6).

The server lists the kernelspec, starts the kernel the way it does for a
browser (nudging it with kernel_info on shell and control until iopub
answers), and relays the channels over its WebSocket. A cell sent there must
come back with its outputs, as it would in a browser tab.
"""

import asyncio
import json
import os
import socket
import subprocess
import time
import urllib.request
import uuid

import pytest
from tornado.websocket import websocket_connect

from conftest import KERNEL

TOKEN = uuid.uuid4().hex


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _api(port, method, path, body=None):
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"token {TOKEN}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=30) as r:
        data = r.read()
        return json.loads(data) if data else None


@pytest.fixture
def notebook_server(agentkernel_env, tmp_path):
    port = _free_port()
    cmd = [
        "/usr/bin/python3", "-m", "notebook", "--no-browser", "--ip=127.0.0.1",
        f"--port={port}", f"--NotebookApp.token={TOKEN}", f"--notebook-dir={tmp_path}",
        "--NotebookApp.open_browser=False",
    ]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    log = open(tmp_path / "server.log", "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        deadline = time.time() + 60
        while True:
            try:
                _api(port, "GET", "/api")
                break
            except OSError:
                if proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError("notebook server did not start:\n" + (tmp_path / "server.log").read_text())
                time.sleep(0.2)
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _msg(msg_type, content, session):
    return {
        "header": {"msg_id": uuid.uuid4().hex, "username": "test", "session": session,
                   "msg_type": msg_type, "version": "5.3", "date": ""},
        "parent_header": {}, "metadata": {}, "content": content, "channel": "shell", "buffers": [],
    }


async def _run_cell(port, kernel_id, code):
    session = uuid.uuid4().hex
    url = f"ws://127.0.0.1:{port}/api/kernels/{kernel_id}/channels?session_id={session}&token={TOKEN}"
    conn = await websocket_connect(url)
    try:
        req = _msg("execute_request", {"code": code, "silent": False, "store_history": True,
                                       "user_expressions": {}, "allow_stdin": False,
                                       "stop_on_error": True}, session)
        conn.write_message(json.dumps(req))
        seen, reply = [], None
        deadline = time.time() + 60
        while time.time() < deadline:
            raw = await asyncio.wait_for(conn.read_message(), timeout=60)
            assert raw is not None, "websocket closed"
            m = json.loads(raw)
            if m.get("parent_header", {}).get("msg_id") != req["header"]["msg_id"]:
                continue
            if m["msg_type"] == "execute_reply":
                reply = m
            else:
                seen.append(m)
            if reply and seen and seen[-1]["msg_type"] == "status" \
                    and seen[-1]["content"]["execution_state"] == "idle":
                return reply, seen
        raise AssertionError(f"no reply+idle; saw {[m['msg_type'] for m in seen]}")
    finally:
        conn.close()


def test_cell_through_notebook_server(notebook_server):
    port = notebook_server
    specs = _api(port, "GET", "/api/kernelspecs")["kernelspecs"]
    assert KERNEL in specs, sorted(specs)
    assert specs[KERNEL]["spec"]["display_name"] == "Agent (test)"

    kernel = _api(port, "POST", "/api/kernels", {"name": KERNEL})
    try:
        reply, outputs = asyncio.run(_run_cell(port, kernel["id"], "print('via notebook'); 6 * 7"))
        assert reply["content"]["status"] == "ok"
        kinds = [m["msg_type"] for m in outputs]
        assert kinds[0] == "status" and outputs[0]["content"]["execution_state"] == "busy", kinds
        streams = [m["content"]["text"] for m in outputs if m["msg_type"] == "stream"]
        assert "via notebook\n" in streams, kinds
        results = [m["content"]["data"]["text/plain"] for m in outputs if m["msg_type"] == "execute_result"]
        assert results == ["42"], kinds
        # The server learns the state from iopub on its own connection, a
        # moment after our client saw the idle.
        deadline = time.time() + 10
        while (info := _api(port, "GET", f"/api/kernels/{kernel['id']}"))["execution_state"] != "idle" \
                and time.time() < deadline:
            time.sleep(0.05)
        assert info["execution_state"] == "idle", info
    finally:
        _api(port, "DELETE", f"/api/kernels/{kernel['id']}")
    running = [k["id"] for k in _api(port, "GET", "/api/kernels")]
    assert kernel["id"] not in running
