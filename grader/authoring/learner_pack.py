"""`make learner-pack`: the archive a learner outside the workshop hub gets (issue 17).

It holds the learner notebooks (``notebooks/`` and the Japanese edition ``notebooks-ja/``, what
``grader.authoring.release`` published), the ``raylab``
package (``src/raylab`` + ``pyproject.toml``), the environment files (``requirements.txt``,
``constraints.txt``, ``environment.yml``), the learner JupyterLab configuration
(``workshop/learner-jupyter-config``) and, from ``workshop/learner-pack/``, a Makefile with the
learner's two commands (``make setup``, ``make lab``: the same recipes as the course Makefile's,
``tests/workshop/test_learner_pack.py`` compares them), a README for learners and an ``nbgrader_config.py``
for Validate. Nothing else: no ``solutions/``, no ``grader/`` (mutants, hidden-test tooling),
no tests, no gradebooks, no git history.

Files are taken from git's index when the clone is a git repository (so caches, ``*.egg-info``
and anything untracked stay out), else from the folders with those filtered out.
"""
from __future__ import annotations

import argparse
import io
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACK_TEMPLATE = ROOT / "workshop" / "learner-pack"
NAME = "raylab-learner-pack"
# Course paths copied as they are (folders: every file below them).
COPIED = ["notebooks", "notebooks-ja", "src/raylab", "workshop/learner-jupyter-config", "pyproject.toml",
          "requirements.txt", "constraints.txt", "environment.yml"]
# workshop/learner-pack/<name> -> <name> in the pack.
TEMPLATED = ["Makefile", "README.md", "nbgrader_config.py"]
_SKIPPED_PARTS = {"__pycache__", ".ipynb_checkpoints", ".pytest_cache"}


def _tracked(root: Path) -> list[str] | None:
    try:
        out = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--", *COPIED],
                             capture_output=True, check=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return sorted(p for p in out.decode().split("\0") if p)


def pack_files(root: Path = ROOT) -> dict[str, Path]:
    """``{path inside the pack: source file}``."""
    names = _tracked(root)
    if names is None:
        names = []
        for entry in COPIED:
            path = root / entry
            files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
            names += [str(p.relative_to(root)) for p in files
                      if not _SKIPPED_PARTS & set(p.parts) and not p.name.endswith(".pyc")
                      and ".egg-info" not in str(p)]
    files = {name: root / name for name in names if (root / name).is_file()}
    for name in TEMPLATED:
        files[name] = PACK_TEMPLATE / name
    return files


def build(out: Path, root: Path = ROOT) -> Path:
    """Write the pack to ``out`` (``.tar.gz``), every file under ``raylab-learner-pack/``."""
    out.parent.mkdir(parents=True, exist_ok=True)
    now = int(time.time())
    with tarfile.open(out, "w:gz") as tar:
        for name, source in sorted(pack_files(root).items()):
            data = source.read_bytes()
            info = tarfile.TarInfo(f"{NAME}/{name}")
            info.size, info.mtime, info.uname, info.gname = len(data), now, "", ""
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=str(ROOT / "build" / f"{NAME}.tar.gz"))
    args = parser.parse_args(argv)
    out = build(Path(args.out))
    with tarfile.open(out) as tar:
        count = len(tar.getmembers())
    print(f"[learner-pack] {out} ({count} files, {out.stat().st_size / 1e6:.1f} MB): "
          f"tar xzf {out.name} && cd {NAME} && make setup && make lab")
    return 0


if __name__ == "__main__":
    sys.exit(main())
