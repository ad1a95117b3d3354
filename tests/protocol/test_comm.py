"""Comms and the Jupyter widget protocol (version 2.1.0), through %interact.

The kernel opens the models of a %interact widget itself (target jupyter.widget): these tests
play the frontend with jupyter_client. They check the comm_open messages against the model specs
(ipywidgets 8's jupyterwidgetmodels: every model's required keys, references to models opened
before), comm_info, a control's "update" re-running the command with its result replacing the
Output's, request_state, changes coalesced while a run goes on, errors and interrupts shown in the
widget, malformed messages logged and dropped, comm_open from a frontend closed at once, the
usage errors of %interact, its completion and help, the limit of live widgets, and the widgets
closed at shutdown. Everything runs on the CPU backend.
"""
from __future__ import annotations

import importlib.util
import json
import time
from queue import Empty

import pytest

from conftest import collect_iopub, execute, outputs, request, streams

CELL = "%interact %matmul --size 64 --variant tiled --tile 4,8,16"
TWO = "%interact %matmul --size 64 --variant naive,tiled --tile 4,8"

COMMON = {"_model_module", "_model_module_version", "_model_name", "_view_module",
          "_view_module_version", "_view_name", "_view_count"}
DOM = COMMON | {"_dom_classes", "layout", "tabbable", "tooltip"}
SELECTION = DOM | {"_options_labels", "index", "description", "description_allow_html", "disabled", "style"}
# the keys each model's state must have (jupyterwidgetmodels.latest.md, ipywidgets 8)
REQUIRED = {
    ("@jupyter-widgets/base", "LayoutModel"): COMMON | {"width", "height", "display", "margin", "padding"},
    ("@jupyter-widgets/controls", "SliderStyleModel"): COMMON | {"description_width", "handle_color"},
    ("@jupyter-widgets/controls", "DescriptionStyleModel"): COMMON | {"description_width"},
    ("@jupyter-widgets/controls", "SelectionSliderModel"): SELECTION | {"behavior", "continuous_update",
                                                                          "orientation", "readout"},
    ("@jupyter-widgets/controls", "DropdownModel"): SELECTION,
    ("@jupyter-widgets/output", "OutputModel"): DOM | {"msg_id", "outputs"},
    ("@jupyter-widgets/controls", "VBoxModel"): DOM | {"children", "box_style"},
}
VERSIONS = {"@jupyter-widgets/base": "2.0.0", "@jupyter-widgets/controls": "2.0.0",
            "@jupyter-widgets/output": "1.0.0"}


# ---------------------------------------------------------------- helpers

class Widget:
    """The models a %interact cell opened, by comm id, in the order they came."""

    def __init__(self, msgs: list[dict]):
        self.opens = [m for m in msgs if m["msg_type"] == "comm_open"]
        self.states = {m["content"]["comm_id"]: m["content"]["data"]["state"] for m in self.opens}
        self.displays = [m for m in msgs if m["msg_type"] == "display_data"]

    def ids(self, model: str) -> list[str]:
        return [i for i, s in self.states.items() if s["_model_name"] == model]

    def one(self, model: str) -> str:
        ids = self.ids(model)
        assert len(ids) == 1, f"{len(ids)} {model}s"
        return ids[0]


def open_widget(kc, code: str = CELL) -> tuple[Widget, list[dict]]:
    reply, msgs = execute(kc, code)
    assert reply["content"]["status"] == "ok", reply["content"]
    w = Widget(msgs)
    assert w.opens and w.displays, [m["msg_type"] for m in msgs]
    return w, msgs


def comm_msg(kc, comm_id: str | None, data, wait: bool = True, timeout: float = 60) -> tuple[str, list[dict]]:
    """Sends a comm_msg as a frontend would; returns its msg_id and (wait) its iopub messages."""
    content = {"data": data} if comm_id is None else {"comm_id": comm_id, "data": data}
    msg = kc.session.msg("comm_msg", content)
    kc.shell_channel.send(msg)
    msg_id = msg["header"]["msg_id"]
    return msg_id, collect_iopub(kc, msg_id, timeout) if wait else []


def update(kc, comm_id: str, index, **kw) -> list[dict]:
    return comm_msg(kc, comm_id, {"method": "update", "state": {"index": index}, "buffer_paths": []}, **kw)[1]


def output_updates(msgs: list[dict], output_id: str) -> list[list[dict]]:
    """The outputs set on the Output model by these messages, in order."""
    return [m["content"]["data"]["state"]["outputs"] for m in msgs
            if m["msg_type"] == "comm_msg" and m["content"]["comm_id"] == output_id
            and m["content"]["data"]["method"] == "update" and "outputs" in m["content"]["data"]["state"]]


def tiles(outs: list[dict]) -> list[int]:
    """The tile of every run in the result documents among outputs."""
    return [r["tile"] for o in outs if o["output_type"] == "display_data"
            for r in o["data"]["application/vnd.cudalab.result+json"]["runs"]]


def collect_many(kc, ids: list[str], timeout: float = 60) -> dict[str, list[dict]]:
    """The iopub messages of each of several requests in flight at once, up to each one's idle."""
    per: dict[str, list[dict]] = {i: [] for i in ids}
    left, deadline = set(ids), time.monotonic() + timeout
    while left:
        assert time.monotonic() < deadline, f"no idle for {sorted(left)}"
        try:
            msg = kc.get_iopub_msg(timeout=1)
        except Empty:
            continue
        parent = msg["parent_header"].get("msg_id")
        if parent in per:
            per[parent].append(msg)
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                left.discard(parent)
    return per


def comm_info(kc, **content) -> dict:
    reply, _ = request(kc, "comm_info_request", content)
    assert reply["content"]["status"] == "ok"
    return reply["content"]["comms"]


def statuses_of(msgs: list[dict]) -> list[str]:
    return [m["content"]["execution_state"] for m in msgs if m["msg_type"] == "status"]


def next_cell_works(kc) -> None:
    reply, msgs = execute(kc, "%echo still here")
    assert reply["content"]["status"] == "ok"
    assert "still here" in "".join(streams(msgs, "stdout"))


# ---------------------------------------------------------------- opening

def test_interact_opens_valid_widget_models(kernel):
    km, kc = kernel
    w, msgs = open_widget(kc)
    for m in w.opens:
        c = m["content"]
        assert c["target_name"] == "jupyter.widget"
        assert m["metadata"] == {"version": "2.1.0"}, m["metadata"]
        assert c["data"]["buffer_paths"] == []
        assert m["parent_header"]["msg_id"] == msgs[0]["parent_header"]["msg_id"]
    seen = set()
    for comm_id, state in w.states.items():
        key = (state["_model_module"], state["_model_name"])
        assert key in REQUIRED, f"unexpected model {key}"
        missing = REQUIRED[key] - set(state)
        assert not missing, f"{key[1]} lacks {sorted(missing)}"
        assert state["_model_module_version"] == VERSIONS[state["_model_module"]]
        # a reference names a model opened before this one
        refs = [v for v in state.values() if isinstance(v, str) and v.startswith("IPY_MODEL_")]
        refs += [v for v in state.get("children", [])]
        for r in refs:
            assert r.removeprefix("IPY_MODEL_") in seen, f"{key[1]} refers to {r}, not opened before it"
        seen.add(comm_id)
    slider = w.states[w.one("SelectionSliderModel")]
    assert slider["_options_labels"] == ["4", "8", "16"] and slider["index"] == 0
    assert slider["description"] == "tile"
    box = w.states[w.one("VBoxModel")]
    assert box["children"] == [f"IPY_MODEL_{w.one('SelectionSliderModel')}", f"IPY_MODEL_{w.one('OutputModel')}"]
    # the first run: its result is in the Output, the box is the cell's display
    first = w.states[w.one("OutputModel")]["outputs"]
    assert tiles(first) == [4], first
    assert "<table" in first[0]["data"]["text/html"]
    (display,) = w.displays
    view = display["content"]["data"]["application/vnd.jupyter.widget-view+json"]
    assert view == {"model_id": w.one("VBoxModel"), "version_major": 2, "version_minor": 1}
    plain = display["content"]["data"]["text/plain"]
    assert "4, 8, 16" in plain and "tiled" in plain, plain     # frontends without widgets see the first run
    assert not [m for m in msgs if m["msg_type"] in ("error", "execute_result")]
    assert not streams(msgs, "stderr")


def test_ipywidgets_would_send_the_same_keys(kernel):
    """Where ipywidgets is installed, each model has exactly the keys ipywidgets gives it."""
    if importlib.util.find_spec("ipywidgets") is None:
        pytest.skip("ipywidgets is not importable (requirements-grade.txt)")
    import ipywidgets
    ours = {s["_model_name"]: set(s) for s in Widget(open_widget(kernel[1], TWO)[1]).states.values()}
    theirs = {"LayoutModel": ipywidgets.Layout(), "SliderStyleModel": ipywidgets.SliderStyle(),
              "DescriptionStyleModel": ipywidgets.widgets.widget_description.DescriptionStyle(),
              "SelectionSliderModel": ipywidgets.SelectionSlider(options=["1"]),
              "DropdownModel": ipywidgets.Dropdown(options=["1"]), "OutputModel": ipywidgets.Output(),
              "VBoxModel": ipywidgets.VBox()}
    for name, widget in theirs.items():
        assert ours[name] == set(widget.get_state()), name


def test_comm_info_lists_the_widgets(kernel):
    km, kc = kernel
    assert comm_info(kc) == {}
    w, _ = open_widget(kc)
    listed = comm_info(kc)
    assert set(listed) == set(w.states)
    assert all(v == {"target_name": "jupyter.widget"} for v in listed.values())
    assert set(comm_info(kc, target_name="jupyter.widget")) == set(w.states)
    assert comm_info(kc, target_name="other.target") == {}


def test_a_numeric_list_is_a_slider_and_others_drop_downs(kernel):
    km, kc = kernel
    w, _ = open_widget(kc, TWO)
    drop = w.states[w.one("DropdownModel")]
    assert drop["_options_labels"] == ["naive", "tiled"] and drop["description"] == "variant"
    assert w.states[w.one("SelectionSliderModel")]["_options_labels"] == ["4", "8"]
    runs = w.states[w.one("OutputModel")]["outputs"][0]["data"]["application/vnd.cudalab.result+json"]["runs"]
    assert [r["variant"] for r in runs] == ["naive"]           # the first choice of each list
    msgs = update(kc, w.one("DropdownModel"), 1)
    (outs,) = output_updates(msgs, w.one("OutputModel"))
    assert [r["variant"] for r in outs[0]["data"]["application/vnd.cudalab.result+json"]["runs"]] == ["tiled"]


# ---------------------------------------------------------------- changes

def test_an_update_reruns_and_replaces_the_result(kernel):
    km, kc = kernel
    w, _ = open_widget(kc)
    slider, out = w.one("SelectionSliderModel"), w.one("OutputModel")
    msgs = update(kc, slider, 2)
    assert statuses_of(msgs) == ["busy", "idle"]
    echo = [m for m in msgs if m["msg_type"] == "comm_msg" and m["content"]["data"]["method"] == "echo_update"]
    assert echo and echo[0]["content"]["comm_id"] == slider
    assert echo[0]["content"]["data"]["state"] == {"index": 2}
    (outs,) = output_updates(msgs, out)
    assert tiles(outs) == [16], outs
    html = outs[0]["data"]["text/html"]
    assert "<table" in html and ">16<" in html.replace(" ", ""), html[:400]
    # nothing but the widget's messages: no output of its own, nothing on stderr
    assert {m["msg_type"] for m in msgs} == {"status", "comm_msg"}
    # the run's result is the session's, as a cell's is
    reply, amsgs = execute(kc, "%assert matmul[tile=16].check.passed and count(matmul[tile=16]) == 1")
    assert reply["content"]["status"] == "ok", reply["content"]
    next_cell_works(kc)


def test_request_state_answers_the_whole_state(kernel):
    km, kc = kernel
    w, _ = open_widget(kc)
    slider = w.one("SelectionSliderModel")
    update(kc, slider, 1)
    for comm_id, opened in w.states.items():
        _, msgs = comm_msg(kc, comm_id, {"method": "request_state"})
        (upd,) = [m for m in msgs if m["msg_type"] == "comm_msg"]
        data = upd["content"]["data"]
        assert upd["content"]["comm_id"] == comm_id and data["method"] == "update"
        assert data["buffer_paths"] == []
        assert set(data["state"]) == set(opened)
        if comm_id == slider:
            assert data["state"]["index"] == 1
        elif opened["_model_name"] == "OutputModel":
            assert tiles(data["state"]["outputs"]) == [8]
        else:
            assert data["state"] == opened
        assert statuses_of(msgs) == ["busy", "idle"]


def test_custom_messages_are_ignored(kernel):
    km, kc = kernel
    w, _ = open_widget(kc)
    _, msgs = comm_msg(kc, w.one("SelectionSliderModel"), {"method": "custom", "content": {"x": 1}})
    assert [m["msg_type"] for m in msgs] == ["status", "status"]
    assert "custom" not in kernel.log.text()


@pytest.mark.serial    # updates counted over a run's wall-clock time: run alone
def test_changes_during_a_run_are_coalesced(kernel):
    km, kc = kernel
    w, _ = open_widget(kc)
    slider, out = w.one("SelectionSliderModel"), w.one("OutputModel")
    ids = [comm_msg(kc, slider, {"method": "update", "state": {"index": i}}, wait=False)[0] for i in (1, 2, 0, 2)]
    per = collect_many(kc, ids)
    for i in ids:
        assert statuses_of(per[i]) == ["busy", "idle"], per[i]
    results = [tiles(o) for i in ids for o in output_updates(per[i], out)]
    assert results[-1] == [16], results              # the latest change is what shows
    assert 1 <= len(results) <= 2, results           # the first, and the latest once it ended
    next_cell_works(kc)


def test_a_failing_run_shows_its_error_in_the_widget(kernel):
    km, kc = kernel
    w, _ = open_widget(kc, "%interact %matmul --size 64,2^40 --variant tiled")
    assert w.states[w.one("SelectionSliderModel")]["description"] == "size"
    out = w.one("OutputModel")
    msgs = update(kc, w.one("SelectionSliderModel"), 1)
    (outs,) = output_updates(msgs, out)
    errors = [o for o in outs if o["output_type"] == "error"]
    assert errors and errors[0]["ename"] and "in cell line 1" in "\n".join(errors[0]["traceback"]), outs
    assert not [m for m in msgs if m["msg_type"] in ("error", "stream")]
    (outs,) = output_updates(update(kc, w.one("SelectionSliderModel"), 0), out)
    assert [o["output_type"] for o in outs] == ["display_data"]
    next_cell_works(kc)


def test_an_interrupt_stops_a_rerun(kernel):
    km, kc = kernel
    w, _ = open_widget(kc, "%interact %matmul --size 64,4096 --variant naive --force --no-check")
    slider, out = w.one("SelectionSliderModel"), w.one("OutputModel")
    msg_id, _ = comm_msg(kc, slider, {"method": "update", "state": {"index": 1}}, wait=False)
    time.sleep(1.0)
    request(kc, "interrupt_request", channel="control")
    msgs = collect_iopub(kc, msg_id, timeout=30)
    (outs,) = output_updates(msgs, out)
    assert [o.get("ename") for o in outs if o["output_type"] == "error"] == ["KeyboardInterrupt"], outs
    (outs,) = output_updates(update(kc, slider, 0), out)
    assert [r["m"] for o in outs for r in o["data"]["application/vnd.cudalab.result+json"]["runs"]] == [64]
    next_cell_works(kc)


# ---------------------------------------------------------------- what a frontend may get wrong

def test_malformed_comm_messages_are_logged_and_dropped(kernel):
    km, kc = kernel
    w, _ = open_widget(kc)
    slider, out = w.one("SelectionSliderModel"), w.one("OutputModel")
    before = kernel.log.text().count("\n")
    comm_msg(kc, None, {"method": "update", "state": {"index": 1}}, wait=False)     # no comm_id: dropped unread
    comm_msg(kc, "no-such-comm", {"method": "update", "state": {"index": 1}})       # unknown comm
    comm_msg(kc, slider, {"state": {"index": 1}})                                   # no method
    comm_msg(kc, slider, {"method": "frobnicate"})                                  # unknown method
    comm_msg(kc, slider, {"method": "update", "state": [1]})                        # state not an object
    comm_msg(kc, out, {"method": "update", "state": {"outputs": []}})               # not a control
    for bad in ("x", 2.5, None, -1, 3, 99, 1 << 62):                                # bad type, not a choice
        _, msgs = comm_msg(kc, slider, {"method": "update", "state": {"index": bad}})
        assert not output_updates(msgs, out), f"index {bad!r} ran"
        back = [m["content"]["data"] for m in msgs if m["msg_type"] == "comm_msg"]
        assert back == [{"method": "update", "state": {"index": 0}, "buffer_paths": []}], back
    log = kernel.log.text()
    assert log.count("\n") - before >= 13, log
    assert "not an integer from 0 to 2" in log and "not open" in log
    assert km.is_alive()
    next_cell_works(kc)
    (outs,) = output_updates(update(kc, slider, 1), out)
    assert tiles(outs) == [8]


@pytest.mark.parametrize("target", ["jupyter.widget.control", "jupyter.widget", "some.other.target"])
def test_comm_open_from_a_frontend_is_closed(kernel, target):
    km, kc = kernel
    msg = kc.session.msg("comm_open", {"comm_id": "frontend-1", "target_name": target, "data": {}})
    kc.shell_channel.send(msg)
    msgs = collect_iopub(kc, msg["header"]["msg_id"])
    closes = [m["content"] for m in msgs if m["msg_type"] == "comm_close"]
    assert closes == [{"comm_id": "frontend-1", "data": {}}]
    assert comm_info(kc) == {}
    next_cell_works(kc)


def test_comm_close_from_a_frontend_closes_the_widget(kernel):
    km, kc = kernel
    w, _ = open_widget(kc)
    kept, _ = open_widget(kc)
    msg = kc.session.msg("comm_close", {"comm_id": w.one("SelectionSliderModel"), "data": {}})
    kc.shell_channel.send(msg)
    msgs = collect_iopub(kc, msg["header"]["msg_id"])
    assert {m["content"]["comm_id"] for m in msgs if m["msg_type"] == "comm_close"} == set(w.states)
    assert set(comm_info(kc)) == set(kept.states)
    _, msgs = comm_msg(kc, w.one("SelectionSliderModel"), {"method": "update", "state": {"index": 1}})
    assert statuses_of(msgs) == ["busy", "idle"] and len(msgs) == 2
    next_cell_works(kc)


# ---------------------------------------------------------------- the language

@pytest.mark.parametrize("code, says", [
    ("%interact", "give the command to run"),
    ("%interact   # nothing", "give the command to run"),
    ("%interact %matmol --tile 2,4", "did you mean %matmul"),
    ("%interact %matmul --size 64", "at least one comma list"),
    ("%interact %matmul --size 64 --tiel 4,8", "unknown flag --tiel"),
    ("%interact %matmul --size 64 --tile 4,64", "--tile"),
    ("%interact %interact %matmul --tile 2,4", "cannot wrap %interact"),
    ("%interact %assert 1 == 1", "%assert runs in the kernel"),
    ("%interact %echo a,b", "%echo runs in the kernel"),
    ("%interact %help matmul", "%help runs in the kernel"),
    ("%interact %%kernel --for matmul --name k", "cell magic"),
    ("%interact %device", "at least one comma list"),
    ("%interact %matmul --size " + ",".join(str(i) for i in range(1, 66)), "takes at most 64"),
    ("%interact %matmul --m 8,16 --n 8,16 --k 8,16 --size 8,16 --tile 4,8 --variant naive,tiled "
     "--block 8x8,16x16", "at most 6 controls"),
])
def test_usage_errors(kernel, code, says):
    km, kc = kernel
    reply, msgs = execute(kc, code)
    c = reply["content"]
    assert c["status"] == "error" and c["ename"] == "UsageError", c
    assert says in c["evalue"], c["evalue"]
    assert not [m for m in msgs if m["msg_type"].startswith("comm_")]
    assert comm_info(kc) == {}
    next_cell_works(kc)


def test_completion_and_help_see_through_interact(kernel):
    km, kc = kernel
    reply, _ = request(kc, "complete_request", {"code": "%inter", "cursor_pos": 6})
    assert "%interact" in reply["content"]["matches"]
    code = "%interact %mat"
    reply, _ = request(kc, "complete_request", {"code": code, "cursor_pos": len(code)})
    c = reply["content"]
    assert "%matmul" in c["matches"] and (c["cursor_start"], c["cursor_end"]) == (10, len(code))
    code = "%interact %matmul --ti"
    reply, _ = request(kc, "complete_request", {"code": code, "cursor_pos": len(code)})
    assert reply["content"]["matches"] == ["--tile"]
    code = "%interact %matmul --variant na"
    reply, _ = request(kc, "complete_request", {"code": code, "cursor_pos": len(code)})
    assert "naive" in reply["content"]["matches"]
    reply, _ = request(kc, "inspect_request", {"code": "%interact %matmul", "cursor_pos": 3})
    assert reply["content"]["found"] and "%interact COMMAND" in reply["content"]["data"]["text/plain"]
    reply, _ = request(kc, "inspect_request", {"code": "%interact %matmul", "cursor_pos": 14})
    assert "%matmul" in reply["content"]["data"]["text/plain"].splitlines()[0]
    reply, msgs = execute(kc, "%help interact")
    text = "".join(json.dumps(m["content"]) for m in outputs(msgs))
    assert "a slider for a list of numbers" in text and "--tile 2,4,8,16,32" in text


# ---------------------------------------------------------------- the widgets' lives

def test_past_the_limit_the_oldest_widget_closes(kernel):
    km, kc = kernel
    first, _ = open_widget(kc, "%interact %matmul --size 16 --variant naive --tile 4,8")
    later = [open_widget(kc, "%interact %matmul --size 16 --variant naive --tile 4,8")[0] for _ in range(7)]
    assert len(comm_info(kc)) == 8 * len(first.states)
    reply, msgs = execute(kc, "%interact %matmul --size 16 --variant naive --tile 4,8")
    assert reply["content"]["status"] == "ok"
    note = "".join(streams(msgs, "stdout"))
    assert "closed the %interact widget of cell [1]" in note and "newest 8" in note, note
    closed = {m["content"]["comm_id"] for m in msgs if m["msg_type"] == "comm_close"}
    assert closed == set(first.states)
    listed = set(comm_info(kc))
    assert len(listed) == 8 * len(first.states) and not listed & set(first.states)
    assert set(later[0].states) <= listed
    assert not streams(msgs, "stderr")


def test_shutdown_closes_the_widgets(start_kernel):
    km, kc = start_kernel()
    w, _ = open_widget(kc)
    msg = kc.session.msg("shutdown_request", {"restart": True})
    kc.control_channel.send(msg)
    msgs = collect_iopub(kc, msg["header"]["msg_id"])
    assert {m["content"]["comm_id"] for m in msgs if m["msg_type"] == "comm_close"} == set(w.states)
