"""Starts a kernel through jupyter_client, as a Jupyter server does, and
waits to be killed. The parent-death tests SIGKILL this process.

    launch_kernel.py KERNEL_NAME [--cell CODE]... [--stream PROMPT]

It prints one JSON line once the kernel is ready and the cells have run:
{"pid", "connection_file"}. With --stream it then sends
PROMPT, waits until the answer has started streaming into the output, and
prints "streaming".
"""

import argparse
import json
import sys
import time

from jupyter_client import KernelManager


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kernel")
    ap.add_argument("--cell", action="append", default=[])
    ap.add_argument("--stream")
    args = ap.parse_args()

    km = KernelManager(kernel_name=args.kernel)
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    for code in args.cell:
        reply = kc.execute_interactive(code, timeout=60, output_hook=lambda m: None)
        if reply["content"]["status"] != "ok":
            sys.exit(f"cell {code!r} failed: {reply['content']}")
    print(json.dumps({"pid": km.provisioner.pid, "connection_file": km.connection_file}), flush=True)
    if args.stream:
        msg_id = kc.execute(args.stream, allow_stdin=False)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            msg = kc.get_iopub_msg(timeout=60)
            if (msg["parent_header"].get("msg_id") == msg_id
                    and msg["header"]["msg_type"] in ("display_data", "update_display_data")
                    and "streamed" in json.dumps(msg["content"])):
                print("streaming", flush=True)
                break
    time.sleep(3600)


if __name__ == "__main__":
    main()
