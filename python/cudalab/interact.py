"""%interact under `%load_ext cudalab`: the cudalab kernel's widgets rebuilt as ipywidgets in the
IPython kernel, so that Colab, Kaggle and VS Code get the live controls the native kernel gives.

The cudalab kernel shows a %interact as Jupyter widget models it opens itself (kernel/shell/interact.c):
a control per comma list of the command above an Output that holds the result. Under %load_ext those
comms are the cudalab kernel's, and the notebook's frontend talks only to the IPython kernel. So the
extension keeps the models the cudalab kernel opens and, when it displays their box, builds the same
controls here as ipywidgets (the same classes, descriptions, labels, chosen index and style) and
relays each way:

- a change of a control here is sent to the cudalab kernel as its own frontend would send it (a
  comm_msg "update" of that control's model), and the extension waits for that re-run as it waits for
  a cell;
- what the cudalab kernel then sets on its Output (the run's outputs, an error with its traceback)
  replaces this Output's outputs whole: the result is replaced in place, never appended;
- a model it closes (a session keeps the newest few live) closes here.

A control here has the kernel's choices, so ipywidgets itself refuses a value the kernel would
(its TraitError), and the kernel's echo of a change is the value this side sent: neither is relayed.

The plan, the runs and their errors, and the results kept for %assert stay in the cudalab kernel:
nothing here reads a command line. Building from ipywidgets' own classes (rather than relaying the
models' states to the frontend) keeps to the widget protocol of whichever ipywidgets the notebook has
(Colab's frontend speaks ipywidgets 7's). Without ipywidgets the cell shows the kernel's text
fallback (the controls' choices and the first result) and says how to get the controls.

The frontend's changes reach the IPython kernel one at a time (each re-run holds its shell as a cell
does), so they run in order and the last one shows last; the cudalab kernel's own coalescing of
changes made during a run has nothing to coalesce here.
"""
from __future__ import annotations

from typing import Any, Callable

WIDGET_VIEW_MIME = "application/vnd.jupyter.widget-view+json"
WIDGET_TARGET = "jupyter.widget"
REF = "IPY_MODEL_"
NO_WIDGETS_NOTE = "[cudalab: `pip install ipywidgets` in this notebook's environment for %interact's live controls]"

# How a change of a control is sent and waited for: (the cudalab kernel's comm id, data) -> None.
# It raises what a cell would (the kernel died, KeyboardInterrupt) and relays the messages that come
# back, the comm messages through Mirrors.comm_msg below.
Send = Callable[[str, dict], None]


class Mirror:
    """One %interact: its models in the cudalab kernel, by comm id, and the ipywidgets built here."""

    def __init__(self, states: dict[str, dict], box_id: str, send: Send, keep: Callable[[dict], None]):
        import ipywidgets

        self.send, self.keep = send, keep
        self.controls: dict[str, Any] = {}
        self.output_id = ""
        children = []
        for ref in states[box_id]["children"]:
            cid = ref[len(REF):]
            state = states[cid]
            if state["_model_name"] == "OutputModel":
                self.output_id, self.output = cid, ipywidgets.Output(outputs=self.kept(state.get("outputs", [])))
                children.append(self.output)
            else:
                children.append(self._control(cid, state, states))
        if not self.output_id:
            raise ValueError("the %interact box has no Output")
        self.box = ipywidgets.VBox(children)
        self.ids = [box_id, *states]      # every model of the interact in the cudalab kernel

    def _control(self, cid: str, state: dict, states: dict[str, dict]):
        import ipywidgets

        classes = {"SelectionSliderModel": ipywidgets.SelectionSlider, "DropdownModel": ipywidgets.Dropdown}
        style = states.get(state.get("style", "")[len(REF):], {})
        kw = {"options": list(state["_options_labels"]), "index": state["index"],
              "description": state["description"], "disabled": state.get("disabled", False),
              "style": {"description_width": style.get("description_width", "")}}
        if state["_model_name"] == "SelectionSliderModel":
            kw.update(continuous_update=state.get("continuous_update", False), readout=state.get("readout", True),
                      orientation=state.get("orientation", "horizontal"))
        w = classes[state["_model_name"]](**kw)
        w.observe(lambda change: self._changed(cid, change["new"]), names="index")
        self.controls[cid] = w
        return w

    def _changed(self, cid: str, index: Any) -> None:
        try:
            self.send(cid, {"method": "update", "state": {"index": index}, "buffer_paths": []})
        except KeyboardInterrupt:
            pass                          # the cudalab kernel was interrupted: its Output says so
        except Exception as e:            # the kernel died or did not answer: said where the result was
            self.set_outputs([{"output_type": "error", "ename": type(e).__name__, "evalue": str(e),
                               "traceback": [f"{type(e).__name__}: {e}"]}])

    def kept(self, outputs: list[dict]) -> tuple[dict, ...]:
        """outputs, once each display's bundle is given to keep (the results for cudalab.results())."""
        for o in outputs:
            if o.get("output_type") == "display_data":
                self.keep(o.get("data", {}))
        return tuple(outputs)

    def set_outputs(self, outputs: list[dict]) -> None:
        self.output.outputs = self.kept(outputs)

    def update(self, cid: str, data: dict) -> None:
        """A comm_msg the cudalab kernel sent on model cid: the Output's new outputs are shown."""
        state = data.get("state") or {}
        if cid == self.output_id and data.get("method") == "update" and "outputs" in state:
            self.set_outputs(state["outputs"])

    def close(self) -> None:
        for w in (*self.controls.values(), self.output, self.box):
            for part in (getattr(w, "style", None), w.layout):     # models of their own
                if part is not None:
                    part.close()
            w.close()


class Mirrors:
    """The %interacts of one cudalab kernel: the models it opened, and the mirrors of those shown."""

    def __init__(self, send: Send, close_remote: Callable[[str], None], keep: Callable[[dict], None]):
        self.send, self.close_remote, self.keep = send, close_remote, keep
        self.opened: dict[str, dict] = {}     # comm id -> state, of models not shown yet
        self.shown: dict[str, Mirror] = {}    # comm id of each model of a shown interact -> its mirror

    def comm_open(self, content: dict) -> None:
        if content.get("target_name") == WIDGET_TARGET:
            self.opened[content["comm_id"]] = (content.get("data") or {}).get("state", {})

    def comm_msg(self, content: dict) -> None:
        mirror = self.shown.get(content.get("comm_id", ""))
        if mirror is not None:
            mirror.update(content["comm_id"], content.get("data") or {})

    def comm_close(self, content: dict) -> None:
        cid = content.get("comm_id", "")
        self.opened.pop(cid, None)
        mirror = self.shown.get(cid)
        if mirror is not None:
            for i in mirror.ids:
                self.shown.pop(i, None)
            mirror.close()

    def show(self, data: dict, display: Any) -> bool:
        """Shows the box a display_data of the cudalab kernel refers to, built here: False when data
        shows no widget of it."""
        view = data.get(WIDGET_VIEW_MIME)
        box_id = view.get("model_id") if isinstance(view, dict) else None
        if box_id not in self.opened:
            return False
        states, self.opened = self.opened, {}     # the box's models are the ones opened before it
        try:
            mirror = Mirror(states, box_id, self.send, self.keep)
        except Exception as e:
            # no ipywidgets, or models this module does not know (a newer kernel's): the text the
            # kernel gives frontends without widgets, and the kernel frees what nobody can move
            display.publish_display_data({k: v for k, v in data.items() if k != WIDGET_VIEW_MIME})
            print(NO_WIDGETS_NOTE if isinstance(e, ImportError) else
                  f"[cudalab: %interact's controls could not be built here ({type(e).__name__}: {e})]")
            self.close_remote(box_id)
            return True
        for cid in mirror.ids:
            self.shown[cid] = mirror
        display.display(mirror.box)
        return True

    def close_all(self) -> None:
        for mirror in {id(m): m for m in self.shown.values()}.values():
            mirror.close()
        self.shown.clear()
        self.opened.clear()
