"""The Jupyter stack the Python suites run on: the interpreter that runs
pytest, and the jupyter command beside it.

Debian's (``/usr/bin/python3 -m pytest``: Notebook 6.4, ipykernel 6.17,
jupyter_client 7.4) or the one users run from PyPI (the venv of
``scripts/modern-venv.sh``: JupyterLab 4, Notebook 7, ipykernel 7,
jupyter_client 8, jupyter_server 2). In a venv, its python3 kernelspec (pip's
ipykernel) is the backing kernel, and the Jupyter server is jupyter_server's.
"""

import sys
from pathlib import Path

PYTHON = sys.executable
_jupyter = Path(sys.executable).parent / "jupyter"
JUPYTER = str(_jupyter) if _jupyter.exists() else "/usr/bin/jupyter"
# MODERN: running in a virtual environment (the PyPI stack), not Debian's.
MODERN = sys.prefix != sys.base_prefix
VENV_DATA = str(Path(sys.prefix) / "share" / "jupyter") if MODERN else None
# The backing kernel the suites' python3 is: pip's ipykernel in the venv,
# else Debian's.
BACKING_SPEC = (VENV_DATA + "/kernels/python3") if MODERN else "/usr/share/jupyter/kernels/python3"
BACKING_PYTHON = str(Path(sys.prefix) / "bin" / "python") if MODERN else "/usr/bin/python3"
