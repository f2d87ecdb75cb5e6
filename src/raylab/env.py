"""Environment check: what the course runs on, as [OK]/[FAIL] lines.

Learners run ``python -m raylab.env`` (or lab 00) before the first lab; CI runs the same check as a
test. It exits non-zero when a required piece is missing or at the wrong version.
"""
from __future__ import annotations

import importlib.metadata as md
import platform
import sys

from raylab.i18n import _

# What the course was checked with. Python 3.12 is what the course documents; 3.11 works too.
REQUIRED = {
    "ray": "2.58.0",
    "torch": "2.13.0",
    "jupyterlab": "4.6.6",
    "nbgrader": "0.9.6",
}
MIN_PYTHON = (3, 11)


def installed_version(dist: str) -> str | None:
    try:
        return md.version(dist)
    except md.PackageNotFoundError:
        return None


def ray_extra_requirements(extra: str) -> list[str]:
    """The distributions ``pip install 'ray[<extra>]'`` pulls in, read from Ray's own metadata."""
    names = []
    for req in md.requires("ray") or []:
        if "extra ==" not in req:
            continue
        spec, marker = req.split(";", 1)
        if f'extra == "{extra}"' in marker.replace("'", '"'):
            name = spec.strip().split("[")[0]
            for sep in "<>=!~ (":
                name = name.split(sep)[0]
            names.append(name.strip().lower())
    return sorted(set(names))


def checks() -> list[tuple[str, bool, str]]:
    """(name, ok, detail) rows. Torch's local build tag (``+cpu``/``+cu128``) is accepted."""
    rows = [("python", sys.version_info[:2] >= MIN_PYTHON, platform.python_version())]
    for dist, wanted in REQUIRED.items():
        got = installed_version(dist)
        ok = got is not None and got.split("+")[0] == wanted
        rows.append((dist, ok, _("{got} (course: {wanted})").format(got=got or _("missing"), wanted=wanted)))
    try:
        import torch

        cuda = torch.cuda.is_available()
        detail = _("{n} GPU(s), CUDA {cuda}").format(n=torch.cuda.device_count(), cuda=torch.version.cuda) \
            if cuda else _("no CUDA device: labs use CPU and the gloo backend")
        rows.append(("cuda", True, detail))
    except ImportError:
        rows.append(("cuda", False, _("torch is not importable")))
    rows.append(slow_ray_import_check())
    return rows


def slow_ray_import_check() -> tuple[str, bool, str]:
    """Every Ray process imports jsonschema; jsonschema 4.24+ then imports rfc3987-syntax when it is
    installed (Jupyter's format-nongpl extra brings it), which builds a parser: 1.5 s more for every
    Ray worker, about twice the start-up of a Train run on 2 cores. requirements.txt pins 4.23.0."""
    import importlib.util

    version = installed_version("jsonschema") or "0"
    newer = tuple(int(p) for p in version.split(".")[:2] if p.isdigit()) >= (4, 24)
    slow = newer and importlib.util.find_spec("rfc3987_syntax") is not None
    detail = (_("jsonschema {version} with rfc3987-syntax installed: every Ray process spends ~1.5 s "
                "building a parser (pip install jsonschema==4.23.0)") if slow
              else _("jsonschema {version}: no slow import in Ray's processes")).format(version=version)
    return ("ray import", not slow, detail)


def main() -> int:
    rows = checks()
    for name, ok, detail in rows:
        print(f"[{'OK' if ok else 'FAIL'}] {name:<11} {detail}")
    return 0 if all(ok for _name, ok, _detail in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
