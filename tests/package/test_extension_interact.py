"""%interact under `%load_ext cudalab` in a plain IPython kernel (ipykernel, ipywidgets), as on Colab,
Kaggle or VS Code: the live controls the native kernel gives, built as ipywidgets in the IPython
kernel (python/cudalab/interact.py).

nbclient runs the notebook and keeps its widgets' states as a frontend does; a second client plays
the frontend's widget manager, moving a control with the comm message JupyterLab sends (an "update"
of the control's index), as tests/protocol/test_comm.py does against the native kernel and
tests/browser/test_lab_interact.py with a real slider. Checked: the controls are the native kernel's
for the same line (asked of a cudalab kernel in the same test: classes, descriptions, labels, index,
style), a change re-runs the command and its result replaces the Output's (never appended), a run
that fails shows its error in the widget with nothing on stderr, a value the control does not have
is refused without a run, the runs' results reach %assert and cudalab.documents(), the stop button
stops a re-run, the kernel's limit of live widgets closes the oldest here too, and without ipywidgets
the cell shows the text fallback and frees the kernel's widget. Everything runs on the CPU backend.
"""
from __future__ import annotations

import json
import os
import time
from contextlib import contextmanager
from pathlib import Path
from queue import Empty

import pytest
from jupyter_client import BlockingKernelClient
from jupyter_core.utils import run_sync
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook

from conftest import REPO, collect_iopub, execute, kernel_binary
from pkg_notebooks import RESULT

SLIDER = "%interact %matmul --size 64 --variant tiled --tile 4,8,16"
TWO = "%interact %matmul --size 64 --variant naive,tiled --tile 4,8"          # a drop-down and a slider
FAILING = "%interact %matmul --size 64,2^40 --variant tiled"                   # its second run fails
SLOW = "%interact %matmul --size 64,4096 --variant naive --force --no-check"   # its second run takes long
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
REF = "IPY_MODEL_"
# what a control shows, compared between the native kernel and the extension
SHOWN = ("_model_name", "description", "_options_labels", "index", "disabled", "continuous_update", "readout",
         "orientation")

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def nb(tmp_path_factory: pytest.TempPathFactory):
    """One notebook for this module's tests (one IPython kernel and its cudalab kernel, as a student's
    notebook has), importing this tree's package, running the binary under test, logging to a file."""
    folder = tmp_path_factory.mktemp("notebook")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYTHONPATH", os.pathsep.join([str(REPO / "python"), os.environ.get("PYTHONPATH", "")]))
        mp.setenv("CUDALAB_BIN", str(kernel_binary()))
        mp.setenv("CUDALAB_EXTENSION_LOG", str(folder / "cudalab-kernel.log"))
        mp.chdir(folder)
        with notebook(folder) as book:
            yield book


class Notebook:
    """A Python notebook run cell by cell by nbclient, and a frontend's client of the same kernel."""

    def __init__(self, client: NotebookClient, frontend: BlockingKernelClient, folder: Path):
        self.client, self.frontend = client, frontend
        self.log = folder / "cudalab-kernel.log"       # the cudalab kernel's

    def run(self, source: str) -> list[dict]:
        """Runs one more cell (it must succeed); its outputs."""
        nb = self.client.nb
        nb.cells.append(new_code_cell(source))
        self.client.execute_cell(nb.cells[-1], len(nb.cells) - 1)
        return nb.cells[-1].outputs

    def state(self, model_id: str) -> dict:
        return self.client.widget_state[model_id]

    def widget(self, source: str) -> tuple[list[dict], str]:
        """Runs a %interact cell: the states of its box's children, and the Output's model id."""
        outs = self.run(source)
        assert [o["output_type"] for o in outs] == ["display_data"], outs
        box = self.state(outs[0]["data"][WIDGET_VIEW]["model_id"])
        children = [self.state(ref[len(REF):]) | {"id": ref[len(REF):]} for ref in box["children"]]
        (output,) = [c["id"] for c in children if c["_model_name"] == "OutputModel"]
        return children, output

    def move(self, model_id: str, index) -> list[dict]:
        """The frontend sets a control's index; the iopub messages of that change, up to idle."""
        msg = self.frontend.session.msg("comm_msg", {"comm_id": model_id, "data": {
            "method": "update", "state": {"index": index}, "buffer_paths": []}})
        self.frontend.shell_channel.send(msg)
        return collect_iopub(self.frontend, msg["header"]["msg_id"], timeout=60)


def _subscribed(kc: BlockingKernelClient) -> None:
    """Returns once kc's iopub hears the kernel (its subscription is in place)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        msg_id = kc.kernel_info()
        try:
            while True:
                msg = kc.get_iopub_msg(timeout=1)
                if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "status" \
                        and msg["content"]["execution_state"] == "idle":
                    return
        except Empty:
            continue
    raise AssertionError("the frontend's client never heard the IPython kernel on iopub")


@contextmanager
def notebook(folder: Path):
    nb = new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "python3", "language": "python"}
    client = NotebookClient(nb, kernel_name="python3", timeout=60, resources={"metadata": {"path": str(folder)}})
    with client.setup_kernel():
        frontend = BlockingKernelClient()
        frontend.load_connection_info(client.km.get_connection_info())
        frontend.start_channels()
        try:
            _subscribed(frontend)
            book = Notebook(client, frontend, folder)
            book.run("%load_ext cudalab")
            yield book
        finally:
            frontend.stop_channels()


def output_updates(msgs: list[dict], output_id: str) -> list[list[dict]]:
    """The outputs set on the Output model by these messages, in order."""
    return [m["content"]["data"]["state"]["outputs"] for m in msgs
            if m["msg_type"] == "comm_msg" and m["content"]["comm_id"] == output_id
            and m["content"]["data"].get("method") == "update" and "outputs" in m["content"]["data"]["state"]]


def results(outs: list[dict]) -> list[dict]:
    return [o["data"][RESULT] for o in outs if o["output_type"] == "display_data"]


def runs(outs: list[dict], key: str) -> list:
    return [r[key] for doc in results(outs) for r in doc["runs"]]


def native_controls(kc, source: str) -> list[dict]:
    """What the native kernel's controls for source show, in the box's order."""
    reply, msgs = execute(kc, source)
    assert reply["content"]["status"] == "ok", reply["content"]
    states = {m["content"]["comm_id"]: m["content"]["data"]["state"] for m in msgs if m["msg_type"] == "comm_open"}
    (box,) = [s for s in states.values() if s["_model_name"] == "VBoxModel"]
    return [shown(states[ref[len(REF):]], states) for ref in box["children"]]


def shown(state: dict, states: dict) -> dict:
    style = states.get(state.get("style", "")[len(REF):], {})
    return {k: state[k] for k in SHOWN if k in state} | {"description_width": style.get("description_width")}


def quiet(msgs: list[dict]) -> None:
    """Nothing reached the cell as an error or as stderr."""
    bad = [m for m in msgs if m["msg_type"] == "error"
           or (m["msg_type"] == "stream" and m["content"]["name"] == "stderr")]
    assert not bad, bad


def test_controls_are_the_native_kernels_and_rerun_in_place(nb: Notebook, kernel):
    _, native = kernel
    # the same controls as the native kernel's, for a slider, and a drop-down beside one
    for source in (SLIDER, TWO):
        children, _ = nb.widget(source)
        states = nb.client.widget_state
        assert [shown(c, states) for c in children if c["_model_name"] != "OutputModel"] == \
            [c for c in native_controls(native, source) if c["_model_name"] != "OutputModel"]
    children, out = nb.widget(SLIDER)
    slider = children[0]["id"]
    assert runs(nb.state(out)["outputs"], "tile") == [4], nb.state(out)["outputs"]
    seen = results(nb.state(out)["outputs"])

    # a move re-runs the command; its result replaces the Output's whole
    msgs = nb.move(slider, 1)
    quiet(msgs)
    (outs,) = output_updates(msgs, out)
    assert [o["output_type"] for o in outs] == ["display_data"] and runs(outs, "tile") == [8], outs
    seen += results(outs)

    # a value the control does not have: ipywidgets refuses it (its TraitError), nothing runs,
    # and the control still works
    for bad in (99, -1, "x"):
        msgs = nb.move(slider, bad)
        assert not output_updates(msgs, out), f"index {bad!r} ran"
        errors = [m["content"] for m in msgs if m["msg_type"] == "error"]
        assert [e["ename"] for e in errors] == ["TraitError"], errors
    msgs = nb.move(slider, 2)
    quiet(msgs)
    (outs,) = output_updates(msgs, out)
    assert runs(outs, "tile") == [16], outs
    seen += results(outs)

    # the drop-down of a second widget
    children, out2 = nb.widget(TWO)
    seen += results(nb.state(out2)["outputs"])
    dropdown = [c["id"] for c in children if c["_model_name"] == "DropdownModel"][0]
    (outs,) = output_updates(nb.move(dropdown, 1), out2)
    assert runs(outs, "variant") == ["tiled"] and runs(outs, "tile") == [4], outs
    seen += results(outs)

    # a run that fails shows its error in the widget, the cell stays quiet; the next run works
    children, out3 = nb.widget(FAILING)
    seen += results(nb.state(out3)["outputs"])
    msgs = nb.move(children[0]["id"], 1)
    quiet(msgs)
    (outs,) = output_updates(msgs, out3)
    (error,) = [o for o in outs if o["output_type"] == "error"]
    assert error["ename"] == "MemoryError" and "in cell line 1" in "\n".join(error["traceback"]), outs
    (outs,) = output_updates(nb.move(children[0]["id"], 0), out3)
    assert runs(outs, "m") == [64], outs
    seen += results(outs)

    # the next cells work; the runs' results are the session's: %assert reads the latest,
    # cudalab.documents() holds each once, in order
    nb.run("%assert matmul.m == 64\n%echo still here")
    (printed,) = nb.run("import cudalab, json\nprint(json.dumps(cudalab.documents()))")
    assert json.loads(printed["text"])[-len(seen):] == seen


def test_stop_button_stops_a_rerun(nb: Notebook):
    children, out = nb.widget(SLOW)
    slider = children[0]["id"]
    msg = nb.frontend.session.msg("comm_msg", {"comm_id": slider, "data": {
        "method": "update", "state": {"index": 1}, "buffer_paths": []}})
    nb.frontend.shell_channel.send(msg)
    time.sleep(1.0)
    started = time.monotonic()
    run_sync(nb.client.km.interrupt_kernel)()   # what the stop button does: the IPython kernel's interrupt
    msgs = collect_iopub(nb.frontend, msg["header"]["msg_id"], timeout=30)
    assert time.monotonic() - started < 10, "the interrupted re-run did not end within 10 s"
    (outs,) = output_updates(msgs, out)
    assert [o.get("ename") for o in outs if o["output_type"] == "error"] == ["KeyboardInterrupt"], outs
    (outs,) = output_updates(nb.move(slider, 0), out)
    assert runs(outs, "m") == [64], outs
    assert "still here" in nb.run("%echo still here")[0]["text"]


def test_the_oldest_widget_closes_past_the_kernels_limit(nb: Notebook):
    """The cudalab kernel keeps its newest INTERACT_MAX_LIVE widgets live and closes the oldest's
    models (saying so in the cell): the ipywidgets built for them close with them."""
    first, _ = nb.widget(SLIDER)
    for opened in range(2, 20):
        msgs = collect_iopub(nb.frontend, nb.frontend.execute(SLIDER), timeout=60)
        quiet(msgs)
        closed = {m["content"]["comm_id"] for m in msgs if m["msg_type"] == "comm_close"}
        if closed:                      # an older one's (another test's) first, or ours
            notes = "".join(m["content"]["text"] for m in msgs if m["msg_type"] == "stream")
            assert "closed the %interact widget of cell" in notes, notes
        if {c["id"] for c in first} <= closed:
            break
    else:
        raise AssertionError(f"{opened} widgets opened and the first never closed")
    assert "still here" in nb.run("%echo still here")[0]["text"]


def test_without_ipywidgets_the_cell_shows_the_text_fallback(nb: Notebook):
    closed_before = nb.log.read_text(errors="replace").count("is closed")
    outs = nb.run("import sys, ipywidgets\nwidgets = sys.modules['ipywidgets']\n"
                  "sys.modules['ipywidgets'] = None       # as where it is not installed\n" + SLIDER)
    try:
        texts = [o["data"]["text/plain"] for o in outs if o["output_type"] == "display_data"]
        assert len(texts) == 1 and "live controls over --tile: 4, 8, 16" in texts[0], outs
        assert not [o for o in outs if WIDGET_VIEW in o.get("data", {})], outs
        assert "pip install ipywidgets" in "".join(o.get("text", "") for o in outs if o["output_type"] == "stream")
        assert "still here" in nb.run("%echo still here")[0]["text"]
        # the cudalab kernel was told: its widget is closed (its log says so)
        deadline = time.monotonic() + 10
        while nb.log.read_text(errors="replace").count("is closed") == closed_before and time.monotonic() < deadline:
            time.sleep(0.2)
        assert nb.log.read_text(errors="replace").count("is closed") == closed_before + 1
    finally:
        nb.run("sys.modules['ipywidgets'] = widgets")
