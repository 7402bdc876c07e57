"""agentkernel installed as "python3" is a drop-in for Debian's ipykernel under nbclient/nbconvert.

agentkernel is installed in code mode into a fresh prefix under the name
python3 (--backing python3): put first on JUPYTER_PATH it shadows
/usr/share/jupyter/kernels/python3, and finds that real python3 behind its
own kernelspec to run the code.  nbclient treats a kernel called python3 as
ipykernel and appends --HistoryManager.hist_file=:memory: to its command
line, which agentkernel passes on to the backing kernel.

Every notebook in tests/notebooks/dropin is executed twice with nbclient, in
separate processes (run_nbclient.py; jupyter_client caches kernelspecs by
name and both kernels are called python3): once with the session's
JUPYTER_PATH, where python3 is Debian's ipykernel, and once with the drop-in
prefix first.  Outputs, execution counts, language_info and widget state
must be the same after normalising what legitimately differs between two
runs (ANSI colours, temporary cell file names, memory addresses, random
widget model ids).  One notebook is also run through `jupyter nbconvert
--execute` on the drop-in.
"""

import difflib
import json
import os
import re
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pytest

from test_nbconvert import _norm, _streams_by_name  # the same normalising of run-to-run noise

HERE = Path(__file__).resolve().parent
NOTEBOOKS = HERE.parent / "notebooks" / "dropin"
RUNNER = HERE / "run_nbclient.py"
from stack import BACKING_SPEC as SYSTEM_SPEC, JUPYTER, PYTHON
HIST_ARG = "--HistoryManager.hist_file=:memory:"

NAMES = ["widgets", "display", "unicode", "errors", "timeout"]
CELL_TIMEOUT = {"timeout": 4}  # seconds per cell: the timeout notebook sleeps past it
DEFAULT_TIMEOUT = 30
NBCONVERT_NOTEBOOK = "display"
RUN_TIMEOUT = 120  # seconds for one helper process, kernel start and shutdown included

WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
# ipywidgets model ids (uuid4().hex) as state keys, "model_id" values and
# IPY_MODEL_ references; the guards keep it from matching inside base64.
MODEL_ID = re.compile(r"(?<![0-9A-Za-z+/])(?:IPY_MODEL_)?([0-9a-f]{32})(?![0-9A-Za-z+/])")


# --------------------------------------------------------------------------
# normalising


def _widget_state(nb):
    return nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})


def model_ids(nb):
    """{model id: "MODEL_n"} numbered in order of first appearance.

    nbformat writes the widget state with sorted (random) keys, so the order
    is rebuilt: the models displayed in the outputs, cell by cell, then the
    models they refer to, breadth first; models that nothing reaches last,
    ordered by their state with the ids masked.
    """
    state = _widget_state(nb)
    order = []

    def visit(text):
        for m in MODEL_ID.finditer(text):
            if m.group(1) not in order:
                order.append(m.group(1))

    visit(json.dumps([c.get("outputs", []) for c in nb.cells], sort_keys=True))
    i = 0
    while i < len(order):
        if order[i] in state:
            visit(json.dumps(state[order[i]], sort_keys=True))
        i += 1
    rest = [k for k in state if k not in order]
    rest.sort(key=lambda k: MODEL_ID.sub("ID", json.dumps(state[k], sort_keys=True)))
    for k in rest:
        visit(json.dumps([k, state[k]], sort_keys=True))
    return {mid: f"MODEL_{n}" for n, mid in enumerate(order)}


def _renumber(value, ids):
    text = json.dumps(value, sort_keys=True)
    text = MODEL_ID.sub(lambda m: m.group(0).replace(m.group(1), ids.get(m.group(1), m.group(1))), text)
    return json.loads(text)


def normalised_cells(nb):
    """[{cell id, first source line, execution_count, outputs}] for every code cell."""
    out = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        outputs = []
        for o in cell.outputs:
            o = _norm(dict(o))
            if o.get("output_type") == "stream":
                if isinstance(o["text"], list):
                    o["text"] = "".join(o["text"])
                # how a stream is cut into messages depends on when ipykernel's
                # flush timer fires (print('a', 1) is four writes): join the pieces
                last = outputs[-1] if outputs else {}
                if last.get("output_type") == "stream" and last["name"] == o["name"]:
                    last["text"] += o["text"]
                    continue
            outputs.append(o)
        outputs = _streams_by_name(outputs)
        out.append({"cell": cell.get("id"), "source": cell.source.splitlines()[0],
                    "execution_count": cell.execution_count, "outputs": outputs})
    return _renumber(out, model_ids(nb))


def normalised_widgets(nb):
    ids = model_ids(nb)
    return _renumber({ids.get(k, k): v for k, v in _widget_state(nb).items()}, ids)


def _diff(want, got, a, b):
    x = json.dumps(want, indent=1, sort_keys=True, ensure_ascii=False).splitlines()
    y = json.dumps(got, indent=1, sort_keys=True, ensure_ascii=False).splitlines()
    return "\n".join(difflib.unified_diff(x, y, a, b, lineterm="", n=4))


def assert_same(want, got, what, a="python3 (ipykernel)", b="python3 (agentkernel drop-in)"):
    if want != got:
        pytest.fail(f"{what} differ (normalised):\n{_diff(want, got, a, b)}", pytrace=False)


# --------------------------------------------------------------------------
# processes


def _proc_state(pid):
    """The process state letter of pid ("Z" for a zombie), or None when it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def _same_process(p):
    """Whether the process recorded as p is still alive with the same command line."""
    if _proc_state(p["pid"]) in (None, "Z"):
        return False
    try:
        cmdline = Path(f"/proc/{p['pid']}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return [a.decode(errors="replace") for a in cmdline if a] == p["cmdline"]


def reap_kernel_processes(info, grace=5.0):
    """Kill what the helper recorded (kernel and descendants) if it outlived the run.

    Returns the processes that were still alive after `grace` seconds.
    """
    procs = ([info["kernel"]] if info.get("kernel") else []) + list(info.get("descendants", {}).values())
    deadline = time.monotonic() + grace
    alive = [p for p in procs if _same_process(p)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = [p for p in alive if _same_process(p)]
    for p in alive:
        try:
            os.kill(p["pid"], signal.SIGKILL)
        except ProcessLookupError:
            pass
    return alive


def _run(cmd, env, cwd, timeout=RUN_TIMEOUT):
    """Run cmd in its own session; on timeout kill the session. -> (returncode, stdout, stderr)."""
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        err += f"\n[test_dropin] killed after {timeout}s"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode, out, err


@dataclass
class Run:
    label: str
    returncode: int
    stderr: str
    nb: object = None
    info: dict = field(default_factory=dict)
    leftovers: list = field(default_factory=list)

    def ok(self):
        if self.returncode != 0 or self.nb is None:
            pytest.fail(f"{self.label}: exit status {self.returncode}\n{self.stderr[-4000:]}", pytrace=False)
        return self


def run_nbclient(name, env, out_dir, label):
    out_dir.mkdir(parents=True, exist_ok=True)
    out, info_path = out_dir / f"{name}.ipynb", out_dir / f"{name}.json"
    cmd = [PYTHON, str(RUNNER), str(NOTEBOOKS / f"{name}.ipynb"), str(out), str(info_path),
           str(CELL_TIMEOUT.get(name, DEFAULT_TIMEOUT))]
    # jupyter_client picks a kernel's ports by binding port 0 and letting it
    # go; with the two runs starting kernels at once, one kernel may find a
    # port taken ("Address already in use") before it binds it. That is the
    # client's race, not the kernel's: the run is tried once more.
    for attempt in range(2):
        info = {}
        try:
            rc, _, err = _run(cmd, env, out_dir)
        finally:
            if info_path.exists():
                info = json.loads(info_path.read_text())
            leftovers = reap_kernel_processes(info)
        if rc == 0 or "Address already in use" not in err:
            break
    nb = nbformat.read(out, as_version=4) if rc == 0 and out.exists() else None
    return Run(f"{label} {name}", rc, err, nb, info, leftovers)


def run_nbconvert(name, env, out_dir):
    out_dir.mkdir(parents=True, exist_ok=True)
    cmd = [JUPYTER, "nbconvert", "--to", "notebook", "--execute", "--allow-errors",
           "--ExecutePreprocessor.kernel_name=python3",
           f"--ExecutePreprocessor.timeout={DEFAULT_TIMEOUT}",
           "--debug",  # logs "Starting kernel: [argv]"
           "--output-dir", str(out_dir), str(NOTEBOOKS / f"{name}.ipynb")]
    rc, out, err = _run(cmd, env, out_dir)
    path = out_dir / f"{name}.ipynb"
    nb = nbformat.read(path, as_version=4) if rc == 0 and path.exists() else None
    return Run(f"nbconvert {name}", rc, out + err, nb)


# --------------------------------------------------------------------------
# fixtures


@pytest.fixture(scope="module")
def dropin(agentkernel_env, tmp_path_factory):
    """Install agentkernel as python3 in a fresh prefix; -> (prefix data dir, install stdout, environments)."""
    tmp = tmp_path_factory.mktemp("dropin")
    prefix = tmp / "prefix"
    data = prefix / "share" / "jupyter"
    base = dict(os.environ)  # the session's JUPYTER_PATH, IPYTHONDIR, JUPYTER_RUNTIME_DIR
    base.update({
        # keep the user's Jupyter data and config out of both runs
        "JUPYTER_DATA_DIR": str(tmp / "jupyter-data"),
        "JUPYTER_CONFIG_DIR": str(tmp / "jupyter-config"),
        "MPLCONFIGDIR": str(tmp / "matplotlib"),
    })
    ours = dict(base, JUPYTER_PATH=os.pathsep.join(filter(None, [str(data), base.get("JUPYTER_PATH")])))
    cmd = [str(agentkernel_env["binary"]), "install", "--prefix", str(prefix), "--name", "python3",
           "--mode", "code", "--backing", "python3", "--probe=false"]
    proc = subprocess.run(cmd, env=ours, capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        pytest.fail(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}", pytrace=False)
    # build matplotlib's font cache once, so that neither run reports building it
    subprocess.run([PYTHON, "-c", "import matplotlib.pyplot"], env=base, check=True,
                   capture_output=True, timeout=120)
    return {"data": data, "install": proc, "python3": base, "dropin": ours, "tmp": tmp}


@pytest.fixture(scope="module")
def runs(dropin):
    """{name: (python3 run, drop-in run)} and the nbconvert run, all executed once."""
    tmp = dropin["tmp"]
    with ThreadPoolExecutor(2) as pool:
        jobs = {}
        for name in NAMES:
            jobs[name] = (pool.submit(run_nbclient, name, dropin["python3"], tmp / "python3", "python3"),
                          pool.submit(run_nbclient, name, dropin["dropin"], tmp / "dropin", "drop-in"))
        conv = pool.submit(run_nbconvert, NBCONVERT_NOTEBOOK, dropin["dropin"], tmp / "nbconvert")
        result = {name: (a.result(), b.result()) for name, (a, b) in jobs.items()}
        result["nbconvert"] = conv.result()
    return result


def _both(runs, name):
    ref, ours = runs[name]
    return ref.ok(), ours.ok()


def _cells(run):
    return {c["cell"]: c for c in normalised_cells(run.nb)}


def _stdout(cell):
    return "".join(o["text"] for o in cell["outputs"] if o["output_type"] == "stream" and o["name"] == "stdout")


def _errors(cell):
    return [o for o in cell["outputs"] if o["output_type"] == "error"]


# --------------------------------------------------------------------------
# tests


def test_install_shadows_system_python3(dropin, agentkernel_env):
    out = dropin["install"].stdout
    assert f"It shadows {SYSTEM_SPEC} " in out, out
    spec = json.loads((dropin["data"] / "kernels" / "python3" / "kernel.json").read_text())
    assert Path(spec["argv"][0]).resolve() == Path(agentkernel_env["binary"]).resolve(), spec
    assert spec["metadata"]["agentkernel"]["backing"] == "python3", spec


@pytest.mark.parametrize("name", NAMES)
def test_each_run_used_the_intended_kernel(runs, dropin, agentkernel_env, name):
    ref, ours = _both(runs, name)
    binary = str(Path(agentkernel_env["binary"]).resolve())

    # reference: Debian's python3 kernelspec, ipykernel itself, nothing below it
    assert ref.info["resource_dir"] == SYSTEM_SPEC, ref.info
    kernel = ref.info["kernel"]
    assert os.path.basename(kernel["exe"]).startswith("python3"), kernel
    assert "ipykernel_launcher" in kernel["cmdline"] and HIST_ARG in kernel["cmdline"], kernel
    assert not ref.info["descendants"], ref.info

    # drop-in: our kernelspec, the agentkernel binary, which passed nbclient's
    # history argument to the real python3 (ipykernel) that runs the code
    assert ref.info["extra_arguments"] == ours.info["extra_arguments"] == [HIST_ARG]
    assert ours.info["resource_dir"] == str(dropin["data"] / "kernels" / "python3"), ours.info
    kernel = ours.info["kernel"]
    assert kernel["exe"].removesuffix(" (deleted)") == binary, kernel
    assert kernel["cmdline"][-1] == HIST_ARG, kernel
    below = list(ours.info["descendants"].values())
    backing = [p for p in below if "ipykernel_launcher" in p["cmdline"]]
    assert len(backing) == 1, below
    assert os.path.basename(backing[0]["exe"]).startswith("python3"), backing
    assert HIST_ARG in backing[0]["cmdline"], backing
    assert not [p for p in below if p["exe"].removesuffix(" (deleted)") == binary], \
        f"agentkernel started itself as its backing kernel: {below}"


@pytest.mark.parametrize("name", NAMES)
def test_same_outputs_as_ipykernel(runs, name):
    ref, ours = _both(runs, name)
    assert_same(normalised_cells(ref.nb), normalised_cells(ours.nb), f"{name}.ipynb outputs")


@pytest.mark.parametrize("name", NAMES)
def test_same_language_info(runs, name):
    ref, ours = _both(runs, name)
    assert ref.nb.metadata.get("language_info"), ref.nb.metadata
    assert_same(ref.nb.metadata["language_info"], ours.nb.metadata.get("language_info"),
                f"{name}.ipynb language_info")


@pytest.mark.parametrize("name", NAMES)
def test_kernel_processes_end_with_the_run(runs, name):
    """nbclient shuts its kernel down: nothing either kernel started outlives the helper."""
    for run in _both(runs, name):
        assert not run.leftovers, f"{run.label}: still running after nbclient finished: {run.leftovers}"


def test_widget_state_matches(runs):
    ref, ours = _both(runs, "widgets")
    want, got = normalised_widgets(ref.nb), normalised_widgets(ours.nb)
    models = {v["model_name"]: v["state"] for v in want.values()}
    # the values set from later cells reached nbclient's copy of the state
    assert models["IntSliderModel"]["value"] == 9, models.get("IntSliderModel")
    assert models["TextModel"]["value"] == "changed from another cell", models.get("TextModel")
    children = [want[ref.removeprefix("IPY_MODEL_")]["model_name"] for ref in models["VBoxModel"]["children"]]
    assert children == ["TextModel", "CheckboxModel"], models["VBoxModel"]
    assert_same(want, got, "widget state")


@pytest.mark.parametrize("which", [0, 1], ids=["python3", "dropin"])
def test_widgets_and_comms(runs, which):
    cells = _cells(_both(runs, "widgets")[which])
    views = [o for o in cells["widgets-1"]["outputs"] if o["output_type"] == "display_data"]
    assert views and views[0]["data"]["application/vnd.jupyter.widget-view+json"]["model_id"] == "MODEL_0", views
    assert _stdout(cells["widgets-2"]) == "value 3 -> 7\nvalue 7 -> 9\n"
    assert cells["widgets-3"]["outputs"][0]["data"]["text/plain"] == "(9, [7, 9])"
    assert cells["widgets-5"]["outputs"][0]["data"]["text/plain"] == "'changed from another cell'"
    # messages from the frontend (the helper) to the kernel: an echo on the
    # kernel's comm, a comm it opened, and a widget update that fired observe
    assert _stdout(cells["widgets-7"]) == (
        "[{'echo': {'hello': 'wörld'}}, {'first': 'message'}]\n"
        "[('dropin.kernel', {'from': 'frontend ✓'})]\n"
        "5 [7, 9, 5]\n")
    assert _stdout(cells["widgets-8"]) == "closed True\n"


@pytest.mark.parametrize("which", [0, 1], ids=["python3", "dropin"])
def test_rich_display(runs, which):
    cells = _cells(_both(runs, "display")[which])
    text = json.dumps(cells, ensure_ascii=False)
    first = cells["display-1"]["outputs"]
    assert first[0]["data"]["text/markdown"] == "**updated from a later cell**", first
    assert [o["data"].get("text/html") for o in first[1:3]] == ["<i>both copies updated</i>"] * 2, first
    assert "*first*" not in text and "shown twice" not in text
    assert _stdout(cells["display-3"]) == "after clear\n"
    assert cells["display-4"]["outputs"] == [{"name": "stdout", "output_type": "stream",
                                              "text": "waiting clear: new\n"}]
    assert _stdout(cells["display-5"]) == "step 2\n" and len(cells["display-5"]["outputs"]) == 1
    png = cells["display-6"]["outputs"]
    assert len(png) == 1 and png[0]["data"]["image/png"].startswith("iVBORw0KGgo"), png
    svg = cells["display-7"]["outputs"]
    assert svg[0]["data"]["image/svg+xml"].startswith("<svg"), svg


@pytest.mark.parametrize("which", [0, 1], ids=["python3", "dropin"])
def test_unicode(runs, which):
    cells = _cells(_both(runs, "unicode")[which])
    assert _stdout(cells["unicode-1"]) == "héllo wörld — 日本語 — Ελληνικά — emoji 🐍🚀\n"
    assert cells["unicode-2"]["outputs"][0]["data"]["text/plain"] == "('Grüße, 世界 🐍', 3.14159)"
    assert _stdout(cells["unicode-4"]) == "é" * 3000 + "\n"
    [err] = _errors(cells["unicode-5"])
    assert (err["ename"], err["evalue"]) == ("ValueError", "naïve café — ошибка ✗ 🐛")
    assert err["traceback"][-1] == "ValueError: naïve café — ошибка ✗ 🐛"


@pytest.mark.parametrize("which", [0, 1], ids=["python3", "dropin"])
def test_errors_skip_stdin_history(runs, which):
    cells = _cells(_both(runs, "errors")[which])
    # nbclient's --HistoryManager.hist_file=:memory: reached IPython
    assert _stdout(cells["errors-1"]) == ":memory:\n"
    names = [e["ename"] for c in cells.values() for e in _errors(c)]
    assert names == ["ZeroDivisionError", "RuntimeError", "DropinError", "SyntaxError", "NameError",
                     "StdinNotImplementedError"], names
    skipped = cells["errors-7"]
    assert skipped["execution_count"] is None and skipped["outputs"] == [], skipped
    assert _stdout(cells["errors-8"]) == "False 1\n"
    assert _stdout(cells["errors-9"]).startswith("StdinNotImplementedError ")
    assert _stdout(cells["errors-12"]) == "still running after errors\n"
    counts = [c["execution_count"] for c in cells.values() if c["cell"] != "errors-7"]
    assert counts == list(range(1, len(counts) + 1)), counts


@pytest.mark.parametrize("which", [0, 1], ids=["python3", "dropin"])
def test_timeout_interrupts_and_kernel_survives(runs, which):
    cells = _cells(_both(runs, "timeout")[which])
    sleeping = cells["timeout-2"]
    assert _stdout(sleeping) == "sleeping\n", sleeping
    assert [e["ename"] for e in _errors(sleeping)] == ["KeyboardInterrupt"], sleeping
    assert _stdout(cells["timeout-3"]) == \
        "['set before the timeout', 'set in the sleeping cell', 'set after the timeout']\n"
    assert _stdout(cells["timeout-4"]) == "kernel is alive 45\n"


def test_nbconvert_on_the_dropin(runs, agentkernel_env):
    conv = runs["nbconvert"].ok()
    ours = runs[NBCONVERT_NOTEBOOK][1].ok()
    binary = str(Path(agentkernel_env["binary"]).resolve())
    started = [line for line in conv.stderr.splitlines() if "Starting kernel:" in line]
    assert len(started) == 1 and f"'{binary}'" in started[0] and f"'{HIST_ARG}'" in started[0], started
    assert_same(normalised_cells(ours.nb), normalised_cells(conv.nb), f"{NBCONVERT_NOTEBOOK}.ipynb outputs",
                "nbclient (drop-in)", "jupyter nbconvert (drop-in)")
    assert conv.nb.metadata.get("language_info") == ours.nb.metadata.get("language_info")
