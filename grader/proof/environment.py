"""The course environment a grading's kernel runs in: the distributions ``requirements.txt`` names
and, transitively, what they require, each keyed by the files pip recorded for it, and the Python
build (the ``environment`` part of a key, :mod:`grader.proof.keys`)."""
from __future__ import annotations

import functools
import platform
import re
import sys
from pathlib import Path

from grader.proof.digests import digest

ROOT = Path(__file__).resolve().parents[2]

REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?")
# Lines of a RECORD that differ between two installs of the same files: scripts outside
# site-packages carry the environment's path in their first line, and pip's own bookkeeping.
RECORD_SKIPPED = re.compile(r"^(\.\./|[^,]*\.dist-info/(INSTALLER|REQUESTED|RECORD|direct_url\.json),)")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def course_requirements(root: Path = ROOT) -> dict[str, set[str]]:
    """name -> extras of each requirement in ``requirements.txt`` (the course environment)."""
    reqs = {}
    for line in (root / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        found = REQUIREMENT.match(line)
        if found and not line.startswith("-"):
            extras = {e.strip() for e in (found.group(2) or "[]")[1:-1].split(",") if e.strip()}
            reqs.setdefault(canonical(found.group(1)), set()).update(extras)
    return reqs


def course_distributions(root: Path = ROOT) -> list:
    """The installed distributions of the course environment: its requirements and, transitively,
    what they require (with the extras asked for and the markers of this Python)."""
    from importlib import metadata

    from packaging.requirements import Requirement

    todo = [(name, extras) for name, extras in course_requirements(root).items()]
    found, extras_seen = {}, {}
    while todo:
        name, extras = todo.pop()
        new = extras - extras_seen.get(name, set())
        if name in found and not new:
            continue
        try:
            dist = found.get(name) or metadata.distribution(name)
        except metadata.PackageNotFoundError:
            raise SystemExit(f"the course environment lacks {name}: run make setup") from None
        found[name] = dist
        extras_seen[name] = extras_seen.get(name, set()) | extras
        for text in dist.requires or []:
            req = Requirement(text)
            wanted = [""] + sorted(extras_seen[name])
            if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in wanted):
                todo.append((canonical(req.name), set(req.extras)))
    return [found[n] for n in sorted(found)]


def distribution_digest(dist) -> str:
    """A distribution by its name, version and the hash of every file pip recorded for it."""
    record = dist.read_text("RECORD") or ""
    lines = sorted(l for l in record.splitlines()
                   if l and not RECORD_SKIPPED.match(l) and not l.endswith(",,"))
    return digest([dist.metadata["Name"], dist.version, lines])


@functools.lru_cache(maxsize=4)
def environment_parts(root: Path = ROOT) -> dict:
    """The course environment as the kernel sees it: each distribution's digest and the Python build."""
    dists = {canonical(d.metadata["Name"]): distribution_digest(d)
             for d in course_distributions(root) if canonical(d.metadata["Name"]) != "raylab"}
    python = [sys.version, list(platform.python_build()), platform.python_implementation(),
              sys.implementation.cache_tag]
    return {"python": python, "distributions": dists}
