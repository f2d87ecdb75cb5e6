"""The machine part of a proof key: the class of machine that grades (operating system, kernel,
cgroup version, architecture, core count, GPU models), not how fast it is right now."""
from __future__ import annotations

import functools
import os
import platform
import re
import subprocess
from pathlib import Path


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def _gpus() -> list[str]:
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return []
    # "GPU 0: NVIDIA H100 80GB HBM3 (UUID: ...)": the model, not the card's serial
    return sorted(re.sub(r"\s*\(UUID:[^)]*\)", "", l) for l in out.stdout.splitlines() if l.strip())


@functools.lru_cache(maxsize=1)
def machine_class() -> dict:
    """What kind of machine grades, not how fast it is right now."""
    os_release = dict(l.split("=", 1) for l in _read("/etc/os-release").splitlines() if "=" in l)
    return {"os": os_release.get("PRETTY_NAME", "").strip('"') or platform.platform(),
            "kernel": platform.release(), "libc": list(platform.libc_ver()),
            "cgroup": 2 if Path("/sys/fs/cgroup/cgroup.controllers").exists() else 1,
            "arch": platform.machine(), "cores": os.cpu_count(), "gpus": _gpus()}
