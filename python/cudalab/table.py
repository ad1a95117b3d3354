"""`cudalab.results()`: the session's result documents as a pandas DataFrame, one row per run.

The extension keeps every result document its cells produced (the
`application/vnd.cudalab.result+json` of each output); this module flattens them. A row is one entry of a document's "runs": its nested objects
joined with dots (`time_ms.median`, `check.passed`, `launch.block`), preceded by which document it
came from (`result`, counted from 0), `magic`, `backend`, the device's name, and the command's
`params.*` that the run does not already state. Documents without runs (%device, %score, %grid) add
no rows: `cudalab.documents()` returns every document as it came.
"""
from __future__ import annotations

from typing import Any, Iterable

LEAD = ("result", "magic", "variant", "backend", "device")


def flatten(obj: dict, prefix: str = "", out: dict | None = None) -> dict[str, Any]:
    """{'time_ms': {'median': 1}} -> {'time_ms.median': 1}; lists of plain values become tuples
    (hashable, so a column can be grouped on), lists of objects are left out (a table cannot hold them)."""
    out = {} if out is None else out
    for key, value in obj.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flatten(value, name + ".", out)
        elif isinstance(value, list):
            if all(not isinstance(v, (dict, list)) for v in value):
                out[name] = tuple(value)
        else:
            out[name] = value
    return out


def rows(documents: Iterable[dict]) -> list[dict[str, Any]]:
    """The table's rows, as plain dicts (what results() hands to pandas)."""
    table = []
    for index, doc in enumerate(documents):
        runs = doc.get("runs")
        if not isinstance(runs, list):
            continue
        device = doc.get("device")
        params = flatten(doc["params"], "params.") if isinstance(doc.get("params"), dict) else {}
        for run in runs:
            if not isinstance(run, dict):
                continue
            row: dict[str, Any] = {"result": index, "magic": doc.get("magic"), "variant": run.get("variant"),
                                   "backend": run.get("backend", doc.get("backend")),
                                   "device": device.get("name") if isinstance(device, dict) else None}
            for key, value in flatten(run).items():
                row.setdefault(key, value)
            for key, value in params.items():
                if key[len("params."):] not in row:
                    row[key] = value
            table.append(row)
    return table


def dataframe(documents: Iterable[dict]):
    """pandas.DataFrame of rows(documents); an ImportError that says how to get pandas when it is missing."""
    try:
        import pandas as pd
    except ImportError as e:
        raise ImportError("cudalab.results() returns a pandas DataFrame, and pandas is not installed here: "
                          "`pip install pandas` (or use cudalab.documents() for the plain result documents)") from e
    table = rows(documents)
    if not table:
        return pd.DataFrame(columns=list(LEAD))
    frame = pd.DataFrame(table)
    lead = [c for c in LEAD if c in frame.columns]
    return frame[lead + [c for c in frame.columns if c not in lead]]
