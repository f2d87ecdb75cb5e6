"""Finding and removing processes: this process's descendants, and a local Ray cluster's.

Used by the cluster start (processes a failed ``ray.init`` left behind), the labs (which ports a
cluster listens on, what survived a teardown) and the tests' leak check.
"""
from __future__ import annotations

import getpass

# Names of the processes a local Ray cluster consists of (as psutil reports them).
_RAY_PROCESS_MARKERS = ("raylet", "gcs_server", "ray::", "plasma_store", "default_worker.py",
                        "log_monitor.py", "dashboard.py", "monitor.py", "runtime_env_agent")


def descendant_pids() -> set[int]:
    """PIDs of every process this one started, directly or not."""
    import psutil

    return {p.pid for p in psutil.Process().children(recursive=True)}


def new_descendants(before: set[int]) -> list:
    """This process's descendants (psutil processes) whose PID is not in ``before``."""
    import psutil

    return [p for p in psutil.Process().children(recursive=True) if p.pid not in before]


def kill_processes(procs: list, timeout_s: float = 10.0) -> None:
    """Kill ``procs`` (psutil processes) and wait up to ``timeout_s`` for them to go."""
    import psutil

    for proc in procs:
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(procs, timeout=timeout_s)


def ray_processes(run_id: str | None = None) -> list[dict]:
    """Ray processes of this user still alive on this machine (pid and command line).

    With ``run_id``, only those started under ``RAYLAB_RUN_ID=<run_id>``: every Ray process
    inherits the environment of the driver that started the cluster, so a grader can tell its own
    leftovers from another cluster on the same machine.
    """
    import psutil

    me = getpass.getuser()
    found = []
    for proc in psutil.process_iter(["pid", "name", "cmdline", "username", "status"]):
        info = proc.info
        if info.get("username") != me or info.get("status") == psutil.STATUS_ZOMBIE:
            continue
        text = " ".join(info.get("cmdline") or [info.get("name") or ""])
        if not any(marker in text for marker in _RAY_PROCESS_MARKERS):
            continue
        if run_id is not None:
            try:
                if proc.environ().get("RAYLAB_RUN_ID") != run_id:
                    continue
            except (psutil.AccessDenied, psutil.NoSuchProcess, psutil.ZombieProcess):
                continue
        found.append({"pid": info["pid"], "cmdline": text[:200]})
    return found


def listening_sockets() -> list[dict]:
    """TCP sockets the local Ray cluster's processes listen on: process name, address, port.

    An address of ``0.0.0.0`` or ``::`` means every network interface of the machine.
    """
    import psutil

    rows = []
    for pid in {p["pid"] for p in ray_processes()}:
        try:
            proc = psutil.Process(pid)
            conns = proc.net_connections(kind="tcp")
            name = proc.name()
        except (psutil.AccessDenied, psutil.NoSuchProcess):
            continue
        for conn in conns:
            if conn.status == psutil.CONN_LISTEN:
                rows.append({"process": name, "address": conn.laddr.ip, "port": conn.laddr.port})
    return sorted(rows, key=lambda r: (r["process"], r["port"]))
