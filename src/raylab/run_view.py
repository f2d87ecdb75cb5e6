"""See a run: its folder, Ray's logs, and what a stuck run is waiting for.

The labs use these to show where things are; each is a thin layer over something you can do by
hand, and the docstrings say what: a run folder is an ordinary folder, the logs are files in
Ray's session folder, and :func:`cluster_status` is the ``ray status`` command of the installed Ray.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from raylab.i18n import _


def session_dir() -> Path:
    """The folder of the running Ray session (``/tmp/ray/session_<date>`` by default; ``session_latest``
    links to it). Its ``logs/`` holds one file per Ray process; ``logs/train/`` holds Ray Train's."""
    import ray

    node = ray._private.worker._global_node
    if node is None:
        raise RuntimeError(_("Ray is not running in this process: start it first (raylab.setup or ray.init)"))
    return Path(node.get_session_dir_path())


def train_logs() -> list[Path]:
    """Ray Train's log files of this session: ``ray-train-app-controller-*.log`` (what the controller
    decided: scheduling, failures, retries) and ``ray-train-app-worker-*.log`` (your workers' logging)."""
    folder = session_dir() / "logs" / "train"
    return sorted(folder.glob("*.log")) if folder.is_dir() else []


def controller_log(run_name: str, lines_per_message: int = 3) -> list[str]:
    """What Ray Train's controller logged for the run named ``run_name``, oldest first: when it
    asked for resources, started the worker group, and each failure-policy decision (RETRY or
    RAISE, with the error count against its limit). The files are JSON lines
    (``ray-train-app-controller-*.log``); this keeps the time and the first lines of each message."""
    found = []
    for path in train_logs():
        if "app-controller" not in path.name:
            continue
        for line in path.read_text(errors="replace").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if record.get("run_name") == run_name:
                text = " | ".join(record.get("message", "").strip().splitlines()[:lines_per_message])
                found.append((record.get("timestamp_ns", 0), record.get("asctime", "")[11:19], text))
    return [f"{clock}  {text}" for _when, clock, text in sorted(found)]


def tail(path: str | Path, lines: int = 10) -> str:
    """The last ``lines`` lines of a text file (``tail -n`` by hand)."""
    text = Path(path).read_text(errors="replace").splitlines()
    return "\n".join(text[-lines:])


def run_tree(path: str | Path, max_entries: int = 40) -> str:
    """A run folder as an indented listing: folders first, files with their size."""
    root = Path(path)
    out = [f"{root}/"]

    def walk(folder: Path, depth: int) -> None:
        entries = sorted(folder.iterdir(), key=lambda p: (not p.is_dir(), p.name))
        for entry in entries:
            if len(out) > max_entries:
                return
            indent = "    " * depth
            if entry.is_dir():
                out.append(f"{indent}{entry.name}/")
                walk(entry, depth + 1)
            else:
                out.append(f"{indent}{entry.name}  ({entry.stat().st_size} bytes)")

    walk(root, 1)
    if len(out) > max_entries:
        out.append("    ...")
    return "\n".join(out)


def cluster_status(timeout_s: float = 60) -> str:
    """What ``ray status`` prints for the running cluster: nodes, resources in use, and the
    *pending demands*: resources that tasks, actors or placement groups wait for."""
    import ray

    node = ray._private.worker._global_node
    if node is None:
        raise RuntimeError(_("Ray is not running in this process: start it first (raylab.setup or ray.init)"))
    ray_cli = Path(sys.executable).parent / "ray"
    done = subprocess.run([str(ray_cli), "status", "--address", node.gcs_address],
                          capture_output=True, text=True, timeout=timeout_s)
    return done.stdout if done.returncode == 0 else done.stdout + done.stderr


def pending_demands(status: str) -> list[str]:
    """The lines under "Pending Demands:" of a ``ray status`` text (empty when nothing waits)."""
    lines = status.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip().startswith("Pending Demands"))
    except StopIteration:
        return []
    found = []
    for line in lines[start + 1:]:
        text = line.strip()
        if not text or text.startswith("=") or not line.startswith(" "):
            break
        if text != "(no resource demands)":
            found.append(text)
    return found
