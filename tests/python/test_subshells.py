"""Kernel subshells (protocol 5.5) in code mode, passed through to a
backing kernel that has them (ipykernel 7 on the PyPI stack): kernel_info
offers them, create/list/delete go to the backing kernel's control channel,
and a request on a subshell runs while the main shell is busy. Debian's
ipykernel 6.17 has none, and neither do we over it.
"""

import time

import pytest

from conftest import KERNEL
from kclient import Kernel
from stack import MODERN


def features(k):
    return k.reply(k.send("kernel_info_request"))["content"].get("supported_features", [])


def test_subshells_follow_the_backing_kernel(agentkernel_env):
    with Kernel(KERNEL) as k:
        k.run("1")  # the backing kernel is up: kernel_info knows its features
        assert ("kernel subshells" in features(k)) == MODERN, features(k)


@pytest.mark.skipif(not MODERN, reason="Debian's ipykernel 6.17 has no kernel subshells")
def test_subshell_runs_beside_the_main_shell(agentkernel_env):
    with Kernel(KERNEL) as k:
        k.run("1")
        rep = k.reply(k.send("create_subshell_request", {}, channel="control"), channel="control")["content"]
        assert rep["status"] == "ok", rep
        sid = rep["subshell_id"]
        listed = k.reply(k.send("list_subshell_request", {}, channel="control"), channel="control")["content"]
        assert sid in listed["subshell_id"], listed

        # The main shell sleeps; the subshell answers meanwhile, in the same
        # interpreter.
        main = k.execute("import time; time.sleep(4); main_done = True")
        time.sleep(0.5)
        msg = k.kc.session.msg("execute_request", {"code": "shared = 'from the subshell'; 'main_done' in globals()",
                                                   "silent": False, "store_history": False, "user_expressions": {},
                                                   "allow_stdin": False, "stop_on_error": True})
        msg["header"]["subshell_id"] = sid
        k.kc.shell_channel.send(msg)
        sub = k.reply(msg["header"]["msg_id"], timeout=30)
        assert sub["content"]["status"] == "ok", sub
        # Its reply came first: the main shell's is not in yet, and the
        # subshell ran before the main shell's code finished.
        assert not k.replies["shell"].get(main), "the subshell waited for the main shell"
        out = [m for m in k.iopub_until_idle(msg["header"]["msg_id"]) if m["header"]["msg_type"] == "execute_result"]
        assert out and out[0]["content"]["data"]["text/plain"] == "False", out
        assert k.reply(main, timeout=30)["content"]["status"] == "ok"
        assert k.value("shared, main_done") == "('from the subshell', True)"

        rep = k.reply(k.send("delete_subshell_request", {"subshell_id": sid}, channel="control"), channel="control")
        assert rep["content"]["status"] == "ok", rep
