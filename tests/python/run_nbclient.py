"""Execute one notebook with nbclient on the kernelspec "python3" (helper of test_dropin.py).

    /usr/bin/python3 run_nbclient.py NOTEBOOK OUT.ipynb INFO.json TIMEOUT

Runs in its own process because jupyter_client caches kernelspec lookups and
test_dropin.py executes the same notebooks on two different kernels that are
both called python3 (which one is found depends on JUPYTER_PATH).

nbclient is given two small frontend behaviours, identical for both kernels:

* Debian's ipywidgets (6.0) opens a widget comm with the bare state as data,
  where nbclient (0.7) expects {"state": ...}; the helper wraps it, so that
  nbclient stores the widget state instead of failing with KeyError.
* A comm target "dropin.echo" is answered as a frontend would: on open it
  sends back {"echo": <open data>}; a message {"to": COMM_ID, "data": D}
  makes it send D to that comm (e.g. a widget update, as when a user moves
  a slider); {"open": TARGET, "data": D} makes it open a comm to the
  kernel's TARGET with D and then send {"first": "message"} on it; any other
  message is echoed.  These travel client -> kernel on the shell channel.

INFO.json tells which kernel really ran: the kernelspec that jupyter_client
picked, the kernel process (its executable and command line) and every
process below it.  It is written as soon as the kernel is up, and again
after each cell, so that the test can clean up whatever outlives this helper.
"""

import json
import os
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient


def _proc(pid):
    """The executable and command line of a live process, or None."""
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return None
    return {"pid": pid, "exe": exe, "cmdline": [a.decode(errors="replace") for a in cmdline if a]}


def _descendants(pid):
    """Every live process below pid (children, grandchildren, ...)."""
    parents = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # the command name (2nd field) is in parentheses and may hold spaces
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        parents.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in sorted(parents.get(todo.pop(), [])):
            info = _proc(child)
            if info:
                out.append(info)
                todo.append(child)
    return out


class EchoComm:
    """The frontend side of a "dropin.echo" comm."""

    def __init__(self, client, msg):
        self.client = client
        self.comm_id = msg["content"]["comm_id"]
        self.send(self.comm_id, {"echo": msg["content"]["data"]}, msg)

    def send(self, comm_id, data, parent, msg_type="comm_msg", **content):
        kc = self.client.kc
        reply = kc.session.msg(msg_type, content={"comm_id": comm_id, "data": data, **content},
                               parent=parent["header"])
        kc.shell_channel.send(reply)

    def handle_msg(self, msg):
        data = msg["content"]["data"]
        if "to" in data:
            self.send(data["to"], data["data"], msg)
        elif "open" in data:
            comm_id = f"frontend-comm-{self.comm_id}"
            self.send(comm_id, data["data"], msg, "comm_open", target_name=data["open"])
            self.send(comm_id, {"first": "message"}, msg)
        else:
            self.send(self.comm_id, {"echo": data}, msg)


class Client(NotebookClient):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.comm_open_handlers["dropin.echo"] = lambda msg: EchoComm(self, msg)

    def handle_comm_msg(self, outs, msg, cell_index):
        content = msg["content"]
        if (msg["msg_type"] == "comm_open" and content.get("target_name") == "jupyter.widget"
                and "state" not in content.get("data", {})):
            content["data"] = {"state": content["data"], "buffer_paths": []}
        super().handle_comm_msg(outs, msg, cell_index)


def main():
    src, dst, info_path, timeout = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4])
    nb = nbformat.read(src, as_version=4)
    info = {"descendants": {}}

    def record(**_):
        km = client.km
        if "kernel" not in info:
            info["kernel_name"] = km.kernel_name
            info["resource_dir"] = km.kernel_spec.resource_dir
            info["spec_argv"] = km.kernel_spec.argv
            info["extra_arguments"] = list(client.extra_arguments)
            info["kernel"] = _proc(km.provisioner.process.pid)
        for p in _descendants(info["kernel"]["pid"]):
            info["descendants"][str(p["pid"])] = p
        tmp = info_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(info, indent=1))
        tmp.replace(info_path)

    client = Client(
        nb,
        kernel_name="python3",
        timeout=timeout,
        startup_timeout=60,
        allow_errors=True,
        interrupt_on_timeout=True,
        store_widget_state=True,
        resources={"metadata": {"path": str(dst.parent)}},
        on_notebook_start=record,
        on_cell_executed=record,
    )
    client.execute()
    nbformat.write(nb, dst)


if __name__ == "__main__":
    main()
