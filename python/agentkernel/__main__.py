"""python -m agentkernel ARGS: run the agentkernel binary with ARGS."""

import os
import sys

from agentkernel import find_binary


def main() -> None:
    binary = find_binary()
    os.execv(binary, [binary, *sys.argv[1:]])


if __name__ == "__main__":
    main()
