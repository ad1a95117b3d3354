"""Sweeps in a notebook: each sweep's progress display is its own. A later sweep (in the same
long-lived device worker) must never update an earlier cell's table, or every sweep cell of a
lecture notebook would end up showing the last one's results."""
from __future__ import annotations

from conftest import execute, outputs


def display_ids(msgs):
    """The sweep's displays (not the line a long command shows, cudalab-run-…)."""
    ids = {m["content"].get("transient", {}).get("display_id") for m in outputs(msgs)
           if m["msg_type"] in ("display_data", "update_display_data")} - {None}
    return {i for i in ids if not i.startswith("cudalab-run-")}


def test_each_sweep_has_its_own_display(start_kernel):
    kc = start_kernel(env={"CUDALAB_BACKEND": "cpu"})[1]
    seen = []
    for tiles in ("2,4", "8,16", "2,4"):
        reply, msgs = execute(kc, f"%matmul --size 32 --variant tiled --tile {tiles} --reps 1 --warmup 0",
                              timeout=60)
        assert reply["content"]["status"] == "ok"
        ids = display_ids(msgs)
        assert len(ids) == 1, ids          # the progress is one display...
        seen.append(ids.pop())
        final = [m for m in outputs(msgs) if "application/vnd.cudalab.result+json" in m["content"].get("data", {})]
        # ...ended by the final table, a new output (what jupyter console prints), the display left
        # with its last state (an emptied one would be saved in the notebook as an empty output)
        assert [m["msg_type"] for m in final] == ["display_data"], final
        assert outputs(msgs).index(final[0]) > 0
        ended = outputs(msgs)[outputs(msgs).index(final[0]) - 1]
        assert ended["msg_type"] == "update_display_data", ended
        assert "2 points done in" in ended["content"]["data"]["text/plain"], ended
    assert len(set(seen)) == 3, seen       # ...that no other sweep touches
