"""Headless execution through nbconvert gives the same notebook on agentkernel as on python3.

tests/notebooks/outputs.ipynb holds every output kind (stdout, stderr, results,
HTML, PNG, an updated display, clear_output, an error, input() without stdin).
It is executed once with each kernel; outputs and execution counts must match
after normalising what legitimately differs between two runs (ANSI colours and
temporary file names in tracebacks, memory addresses).
"""

import difflib
import json
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest

from conftest import KERNEL

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "outputs.ipynb"
from stack import JUPYTER

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
ADDR = re.compile(r"0x[0-9a-fA-F]{4,}")
CELL_FILE = re.compile(r"/tmp/ipykernel_\d+/\d+\.py")
IPYKERNEL_DIR = re.compile(r"ipykernel_\d+")


def _text(s):
    s = ANSI.sub("", s)
    s = CELL_FILE.sub("<cell>", s)
    s = IPYKERNEL_DIR.sub("ipykernel_PID", s)
    return ADDR.sub("0xADDR", s)


def _norm(value):
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, list):
        return [_norm(v) for v in value]
    if isinstance(value, dict):
        return {k: _norm(v) for k, v in value.items() if k != "transient"}
    return value


def normalised_cells(nb):
    """[(index, source first line, execution_count, outputs)] for every code cell."""
    out = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        outputs = []
        for o in cell.outputs:
            o = _norm(dict(o))
            if o.get("output_type") == "stream":
                o["text"] = "".join(o["text"]) if isinstance(o["text"], list) else o["text"]
            outputs.append(o)
        out.append({"cell": i, "source": cell.source.splitlines()[0],
                    "execution_count": cell.execution_count, "outputs": _streams_by_name(outputs)})
    return out


def _streams_by_name(outputs):
    """stdout and stderr are flushed from separate buffers, so a run of stream outputs may come in either
    order, with ipykernel alone too, and a print's text and its newline may be flushed apart ("0", "\\n"):
    within each run, one output per stream name, in name order."""
    result, run = [], {}
    for o in outputs + [None]:
        if o is not None and o.get("output_type") == "stream":
            if o["name"] in run:
                run[o["name"]]["text"] += o["text"]
            else:
                run[o["name"]] = o
            continue
        result += [run[k] for k in sorted(run)]
        run = {}
        if o is not None:
            result.append(o)
    return result


def execute(kernel_name, out_dir):
    out_dir.mkdir(parents=True, exist_ok=True)
    cmd = [JUPYTER, "nbconvert", "--to", "notebook", "--execute", "--allow-errors",
           f"--ExecutePreprocessor.kernel_name={kernel_name}",
           "--ExecutePreprocessor.timeout=60",
           "--output-dir", str(out_dir), str(NOTEBOOK)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr}"
    return nbformat.read(out_dir / NOTEBOOK.name, as_version=4)


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("nbconvert")
    with ThreadPoolExecutor(2) as pool:
        ref = pool.submit(execute, "python3", tmp / "python3")
        ours = pool.submit(execute, KERNEL, tmp / KERNEL)
        return ref.result(), ours.result()


def _outputs(cells, index):
    return next(c["outputs"] for c in cells if c["cell"] == index)


def test_reference_run_has_every_output_kind(executed):
    """The notebook exercises what it claims to, on python3 itself."""
    cells = normalised_cells(executed[0])
    kinds = {(o["output_type"], o.get("name") or ",".join(sorted(o.get("data", {}))))
             for c in cells for o in c["outputs"]}
    for want in [("stream", "stdout"), ("stream", "stderr"),
                 ("execute_result", "text/plain"),
                 ("display_data", "text/html,text/plain"),
                 ("display_data", "image/png,text/plain"),
                 ("display_data", "text/markdown,text/plain"),
                 ("error", "")]:
        assert want in kinds, f"{want} missing from the reference run: {sorted(kinds)}"
    text = json.dumps(cells)
    assert "this is cleared" not in text and "after clear" in text
    assert "**updated from a later cell**" in text and "*first*" not in text
    assert "ZeroDivisionError" in text and "StdinNotImplementedError" in text
    counts = [c["execution_count"] for c in cells]
    assert counts == list(range(1, len(counts) + 1)), counts


def test_same_outputs_as_python3(executed):
    ref, ours = executed
    want, got = normalised_cells(ref), normalised_cells(ours)
    if want != got:
        a = json.dumps(want, indent=1, sort_keys=True).splitlines()
        b = json.dumps(got, indent=1, sort_keys=True).splitlines()
        diff = "\n".join(difflib.unified_diff(a, b, "python3", KERNEL, lineterm="", n=4))
        pytest.fail(f"notebook outputs differ (normalised):\n{diff}", pytrace=False)


def test_same_language_info(executed):
    ref, ours = executed
    assert ours.metadata.get("language_info") == ref.metadata.get("language_info")
