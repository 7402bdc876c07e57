"""The MCP client of tests/browser/peerbench.mjs: one client (Python's `mcp`
SDK, streamable HTTP) times the same notebook operations on agentkernel's
MCP server (`%agent mcp serve` in a notebook open in JupyterLab) and on
jupyter-mcp-server (a Jupyter server extension of the same JupyterLab),
taking turns call by call, and prints p50/p90 of each side by side.

Each round, operation by operation, one call to each server (who goes
first alternates from round to round):
  read     the 2,001-cell notebook as each reads it by default (ours:
           notebook_read {}; theirs: read_notebook, brief, 20 cells), and
           theirs in full as well (detailed, no limit)
  insert   a code cell below the first
  run      that cell (x = i)
  edit     that cell's source, whole

Each addresses the cell as its own results tell it to: ours by the id its
insert returns, theirs by index. The client's response cache is off, so
every call reaches its server.

Environment: OURS_URL, OURS_TOKEN (Bearer), PEER_URL, PEER_TOKEN (Jupyter's
token), PEER_NOTEBOOK (its path under the server's root), N (rounds,
default 15), BASE_URL, BASE_TOKEN (optional: an older agentkernel, measured
as a third column), INSERTS_FILE (where it writes when each insert was
called, epoch ms by side and round: the cell "x = i  # insert i" is then
looked for in the pages).
"""

import asyncio
import json
import os
import re
import sys
import time

from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def text_of(res):
    return "".join(c.text for c in res.content if getattr(c, "type", "") == "text")


def percentile(xs, q):
    s = sorted(xs)
    return s[min(len(s) - 1, int(len(s) * q))]


class Side:
    """One server: its client, its calls for each operation, its times."""

    def __init__(self, name, url, headers):
        self.name = name
        self.url = url
        self.headers = headers
        self.times = {}  # op -> [ms]
        self.chars = {}  # op -> characters of the last result
        self.inserts = {}  # round -> when its insert was called (epoch ms)
        self.client = None

    async def __aenter__(self):
        http = create_mcp_http_client(headers=self.headers)
        self.client = Client(streamable_http_client(self.url, http_client=http), mode="legacy", cache=None)
        await self.client.__aenter__()
        return self

    async def __aexit__(self, *exc):
        await self.client.__aexit__(*exc)

    async def call(self, op, tool, args, insert=None):
        if insert is not None:
            self.inserts[insert] = time.time() * 1000
        t0 = time.perf_counter()
        res = await self.client.call_tool(tool, args)
        ms = (time.perf_counter() - t0) * 1000
        text = text_of(res)
        if res.is_error:
            raise RuntimeError(f"{self.name} {tool} {json.dumps(args)[:200]}: {text[:2000]}")
        if op:
            self.times.setdefault(op, []).append(ms)
            self.chars[op] = len(text)
        return text


class Ours(Side):
    """agentkernel's notebook tools, through the kernel's MCP server."""

    async def step(self, op, i):
        if op == "read":
            await self.call("read", "notebook_read", {})
        elif op == "insert":
            inserted = await self.call("insert", "notebook_insert_cell", {"source": f"x = {i}  # insert {i}", "index": 1}, insert=i)
            m = re.search(r"cell (\S+) at index", inserted)  # "Inserted code cell ID at index 1."
            if not m:
                raise RuntimeError("ours: no cell id in the insert's result: " + inserted[:500])
            self.cell = m.group(1)
        elif op == "run":
            await self.call("run", "notebook_run_cell", {"id": self.cell})
        elif op == "edit":
            await self.call("edit", "notebook_edit_cell", {"id": self.cell, "source": f"x = {i} * 2"})


class Peer(Side):
    """jupyter-mcp-server's tools, on the notebook use_notebook named."""

    async def setup(self, path):
        await self.call(None, "use_notebook", {"notebook_name": "peer", "notebook_path": path})

    async def step(self, op, i):
        if op == "read":
            await self.call("read", "read_notebook", {"notebook_name": "peer"})
            await self.call("read all", "read_notebook", {"notebook_name": "peer", "response_format": "detailed", "limit": 0})
        elif op == "insert":
            await self.call("insert", "insert_cell", {"cell_index": 1, "cell_type": "code", "cell_source": f"x = {i}  # insert {i}"}, insert=i)
        elif op == "run":
            await self.call("run", "execute_cell", {"cell_index": 1})
        elif op == "edit":
            await self.call("edit", "overwrite_cell_source", {"cell_index": 1, "cell_source": f"x = {i} * 2"})


def table(sides, n, warm):
    ours, peer = sides[0], sides[-1]
    cols = [s.name for s in sides]
    head = f"{'operation':<10}" + "".join(f"{c + ' p50/p90 (ms)':>26}" for c in cols) + f"{'ours/peer p50':>16}"
    lines = [head, "-" * len(head)]
    for op in ["read", "read all", "insert", "run", "edit"]:
        row = f"{op:<10}"
        for s in sides:
            xs = s.times.get(op)
            row += f"{'—':>26}" if not xs else f"{percentile(xs, 0.5):>14.1f} / {percentile(xs, 0.9):>7.1f}   "
        mine = ours.times.get(op if op != "read all" else "read")
        theirs = peer.times.get(op)
        if mine and theirs:
            row += f"{percentile(mine, 0.5) / percentile(theirs, 0.5):>15.2f}×"
        lines.append(row)
    lines.append("")
    lines.append("characters returned by one read: " + ", ".join(
        f"{s.name} {s.chars.get('read', 0):,}" for s in sides) + f", peer in full {peer.chars.get('read all', 0):,}")
    lines.append(f"(N={n} rounds after {warm} to warm up, the servers alternating call by call; "
                 "'read all' is the peer's detailed read of every cell, its ratio against our default read)")
    return "\n".join(lines)


async def main():
    n = int(os.environ.get("N", "15"))
    warm = 2
    async with Ours("ours", os.environ["OURS_URL"], {"Authorization": "Bearer " + os.environ["OURS_TOKEN"]}) as ours, \
            Peer("peer", os.environ["PEER_URL"], {"Authorization": "token " + os.environ["PEER_TOKEN"]}) as peer:
        sides = [ours]
        base = None
        if os.environ.get("BASE_URL"):
            base = Ours("baseline", os.environ["BASE_URL"], {"Authorization": "Bearer " + os.environ["BASE_TOKEN"]})
            await base.__aenter__()
            sides.append(base)
        sides.append(peer)
        try:
            await peer.setup(os.environ["PEER_NOTEBOOK"])
            for i in range(warm + n):
                # Who goes first alternates, so neither always runs on the
                # other's leftovers (a Jupyter server still saving, a GC).
                order = sides if i % 2 == 0 else list(reversed(sides))
                for op in ["read", "insert", "run", "edit"]:
                    for s in order:
                        await s.step(op, i)
                print(f"[peerbench] round {i + 1}/{warm + n}", file=sys.stderr, flush=True)
                if i + 1 == warm:
                    for s in sides:
                        s.times = {}
        finally:
            if base:
                await base.__aexit__(None, None, None)
        print(table(sides, n, warm), flush=True)
        if os.environ.get("INSERTS_FILE"):
            with open(os.environ["INSERTS_FILE"], "w") as f:
                json.dump({"warm": warm, **{s.name: s.inserts for s in sides}}, f)


if __name__ == "__main__":
    asyncio.run(main())
