"""agentkernel under the real Jupyter Notebook server (Debian's notebook 6).

The server lists the kernelspec, starts the kernel the way it does for a
browser (nudging it with kernel_info on shell and control until iopub
answers), and relays the channels over its WebSocket. A cell sent there must
come back with its outputs, as it would in a browser tab.
"""

import asyncio
import json
import time
import uuid

from tornado.websocket import websocket_connect

from conftest import KERNEL


def _msg(msg_type, content, session):
    return {
        "header": {"msg_id": uuid.uuid4().hex, "username": "test", "session": session,
                   "msg_type": msg_type, "version": "5.3", "date": ""},
        "parent_header": {}, "metadata": {}, "content": content, "channel": "shell", "buffers": [],
    }


async def _run_cell(server, kernel_id, code):
    session = uuid.uuid4().hex
    url = f"ws://127.0.0.1:{server.port}/api/kernels/{kernel_id}/channels?session_id={session}&token={server.token}"
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


def test_cell_through_notebook_server(jupyter_server):
    server = jupyter_server
    specs = server.api("GET", "/api/kernelspecs")["kernelspecs"]
    assert KERNEL in specs, sorted(specs)
    assert specs[KERNEL]["spec"]["display_name"] == "Agent (test)"

    kernel = server.api("POST", "/api/kernels", {"name": KERNEL})
    try:
        reply, outputs = asyncio.run(_run_cell(server, kernel["id"], "print('via notebook'); 6 * 7"))
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
        while (info := server.api("GET", f"/api/kernels/{kernel['id']}"))["execution_state"] != "idle" \
                and time.time() < deadline:
            time.sleep(0.05)
        assert info["execution_state"] == "idle", info
    finally:
        server.api("DELETE", f"/api/kernels/{kernel['id']}")
    assert kernel["id"] not in server.kernels()
