"""agentkernel: a Jupyter kernel whose cells talk to an AI coding agent.

The package carries the agentkernel binary (installed as a script beside
python); find_binary() returns its path, and ``python -m agentkernel``
runs it.
"""

import os
import sys
import sysconfig
from pathlib import Path

__version__ = "0.1.0"
__all__ = ["find_binary", "__version__"]


def find_binary() -> str:
    """Return the path of the agentkernel binary this package installed."""
    name = "agentkernel"
    dirs = [sysconfig.get_path("scripts"), str(Path(sys.executable).parent)]
    user_scheme = f"{os.name}_user"
    if user_scheme in sysconfig.get_scheme_names():
        dirs.append(sysconfig.get_path("scripts", scheme=user_scheme))
    for d in dirs:
        path = Path(d) / name
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    raise FileNotFoundError(f"the {name} binary is not in {', '.join(dirs)}: reinstall the agentkernel package")
