"""Ray Train's controller logs, read back: when each run did what.

Every Train controller writes a JSON log (``logs/train/ray-train-sys-controller-*.log``) into its
cluster's session folder; each record has a time and a message, and ``run_name`` tells runs apart
when one file holds several. The benchmarks point ``RAY_TMPDIR`` at a private folder to find them.
"""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

WORKERS_UP = "Started training worker group"


def log_time(record: dict) -> float | None:
    """A record's time as epoch seconds (``timestamp_ns``, else ``asctime`` in local time)."""
    if "timestamp_ns" in record:
        return int(record["timestamp_ns"]) / 1e9
    stamp = record.get("asctime")
    if not stamp:
        return None
    return dt.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").astimezone().timestamp()


def controller_records(ray_tmp: Path) -> dict[tuple[str, str], list[tuple[float, str]]]:
    """(log file name, run name) -> [(time, message)], sorted, for every controller log under ``ray_tmp``."""
    records: dict[tuple[str, str], list[tuple[float, str]]] = {}
    for path in sorted(Path(ray_tmp).glob("**/logs/train/ray-train-sys-controller-*.log")):
        for line in path.read_text(errors="replace").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            when = log_time(record)
            if when is not None:
                records.setdefault((path.name, str(record.get("run_name", ""))), []).append(
                    (when, str(record.get("message", ""))))
    return {key: sorted(rows) for key, rows in records.items()}


def train_runs(ray_tmp: Path) -> list[tuple[float, float | None]]:
    """(first record, workers up or None) of every Ray Train run logged under ``ray_tmp``, in
    order of start. A retried run counts its first worker group only."""
    runs = []
    for rows in controller_records(ray_tmp).values():
        up = next((when for when, message in rows if WORKERS_UP in message), None)
        runs.append((rows[0][0], up))
    return sorted(runs, key=lambda run: run[0])
