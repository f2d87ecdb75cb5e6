"""Where a lab's seconds go, from an executed notebook: each code cell's interval (nbclient's
timestamps), its kind (``setup``, ``exercise``, ``demo``) and the Ray and Train start-up inside it."""
from __future__ import annotations

import datetime as dt
import re

CLUSTER_START = re.compile(r"\b(raylab\.setup|raylab\.start_cluster|start_cluster|ray\.init)\(")


def _ts(value: str) -> float:
    """An nbclient ISO timestamp (``2026-12-02T13:17:28.123456Z``) as epoch seconds."""
    return dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def cell_intervals(nb) -> list[tuple[int, float, float, str]]:
    """(cell index, start, end, source) of every executed code cell, from nbclient's metadata."""
    rows = []
    for index, cell in enumerate(nb.cells):
        timing = cell.get("metadata", {}).get("execution", {})
        start = timing.get("iopub.execute_input") or timing.get("iopub.status.busy")
        end = timing.get("shell.execute_reply") or timing.get("iopub.status.idle")
        if cell.cell_type == "code" and start and end:
            rows.append((index, _ts(start), _ts(end), cell.source))
    return rows


def cell_of(cells, moment: float) -> int | None:
    """The index of the cell that was running at ``moment`` (a Train run belongs to the cell
    running when its controller wrote its first record), or None."""
    return next((index for index, start, end, _ in cells if start <= moment <= end), None)


def cell_kind(cell) -> str:
    """``setup`` (starts the cluster), ``exercise`` (the learner's answer or its tests) or ``demo``
    (every other code cell: the course's own demonstrations)."""
    meta = cell.get("metadata", {}).get("nbgrader", {})
    if meta.get("solution") or meta.get("grade"):
        return "exercise"
    return "setup" if CLUSTER_START.search(cell.source) else "demo"


KINDS = ("setup", "exercise", "demo")


def time_by_kind(nb, cells, runs) -> dict:
    """Per kind of cell: the seconds its cells ran and the Train runs they started (a run belongs
    to the cell running when its controller wrote its first record)."""
    out = {kind: {"seconds": 0.0, "train_runs": 0} for kind in KINDS}
    run_cells = [cell_of(cells, first) for first, _ in runs]
    for index, start, end, _ in cells:
        kind = cell_kind(nb.cells[index])
        out[kind]["seconds"] += end - start
        out[kind]["train_runs"] += run_cells.count(index)
    return {kind: {"seconds": round(v["seconds"], 1), "train_runs": v["train_runs"]}
            for kind, v in out.items()}


def merged_length(intervals: list[tuple[float, float]]) -> float:
    """Total length covered by the intervals (overlaps counted once)."""
    total, current = 0.0, None
    for start, end in sorted((s, e) for s, e in intervals if e > s):
        if current is None or start > current[1]:
            if current is not None:
                total += current[1] - current[0]
            current = [start, end]
        else:
            current[1] = max(current[1], end)
    if current is not None:
        total += current[1] - current[0]
    return total


def startup_intervals(cells, runs) -> tuple[list, list]:
    """(Ray start-up intervals, Train start-up intervals) of one executed lab."""
    ray_iv = [(start, end) for _, start, end, src in cells if CLUSTER_START.search(src)]
    train_iv = []
    seen_cells: set[int] = set()
    starts = {index: start for index, start, _, _ in cells}
    for first, up in runs:
        if up is None:  # the workers never came up (a demo of a failure): not start-up time
            continue
        anchor = first
        index = cell_of(cells, first)
        if index is not None and index not in seen_cells:
            anchor = starts[index]
            seen_cells.add(index)
        train_iv.append((anchor, up))
    return ray_iv, train_iv
