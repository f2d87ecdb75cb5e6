"""`make learner-pack [EDITION=ja]`: the archive a learner outside the workshop hub gets (issue 17).

One pack per edition. It holds that edition's learner notebooks (``notebooks/``, or the Japanese
edition's ``notebooks-ja/``: what ``grader.authoring.release`` published), the ``raylab``
package (``src/raylab`` + ``pyproject.toml``), the environment files (``requirements.txt``,
``constraints.txt``, ``environment.yml``), the learner JupyterLab configuration
(``workshop/learner-jupyter-config``) and, from ``workshop/learner-pack/``, a Makefile with the
learner's two commands (``make setup``, ``make lab``: the same recipes as the course Makefile's,
``tests/workshop/test_learner_pack.py`` compares them; the Japanese pack's ``make lab`` opens its
edition), a README for learners (the Japanese pack: ``README.ja.md``, which ``make release`` builds
only when its translation is complete and current, ``grader.authoring.documents``) and an
``nbgrader_config.py`` for Validate. Nothing else: no ``solutions/``, no ``grader/`` (mutants, hidden-test tooling),
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

from grader.authoring import documents, editions

ROOT = Path(__file__).resolve().parents[2]
PACK_TEMPLATE = ROOT / "workshop" / "learner-pack"
NAME = "raylab-learner-pack"
# Course paths copied as they are (folders: every file below them), besides the edition's notebooks.
COPIED = ["src/raylab", "workshop/learner-jupyter-config", "pyproject.toml",
          "requirements.txt", "constraints.txt", "environment.yml"]
# workshop/learner-pack/<name> -> <name> in the pack, besides the edition's README.
TEMPLATED = ["Makefile", "nbgrader_config.py"]
EDITIONS = ("en",) + editions.LANGUAGES
PACK_README = next(d for d in documents.DOCUMENTS if d.name == "learner-pack-readme")


def notebooks_dir(lang: str) -> str:
    return "notebooks" if lang == "en" else f"notebooks-{lang}"


def pack_name(lang: str) -> str:
    return NAME if lang == "en" else f"{NAME}-{lang}"
_SKIPPED_PARTS = {"__pycache__", ".ipynb_checkpoints", ".pytest_cache"}


def _tracked(root: Path, paths: list[str]) -> list[str] | None:
    try:
        out = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--", *paths],
                             capture_output=True, check=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return sorted(p for p in out.decode().split("\0") if p)


def pack_files(root: Path = ROOT, lang: str = "en") -> dict[str, Path]:
    """``{path inside the pack: source file}`` for the edition ``lang``."""
    copied = [notebooks_dir(lang)] + COPIED
    names = _tracked(root, copied)
    if names is None:
        names = []
        for entry in copied:
            path = root / entry
            files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
            names += [str(p.relative_to(root)) for p in files
                      if not _SKIPPED_PARTS & set(p.parts) and not p.name.endswith(".pyc")
                      and ".egg-info" not in str(p)]
    files = {name: root / name for name in names if (root / name).is_file()}
    for name in TEMPLATED:
        files[name] = PACK_TEMPLATE / name
    readme = PACK_README.path if lang == "en" else PACK_README.edition_path(lang)
    files[readme.name] = readme
    return files


def refusals(root: Path, lang: str) -> list[str]:
    """Why the edition ``lang`` cannot be packed now: a lab with no copy in it, or a README
    translation that is missing, incomplete or made from older English."""
    if lang == "en":
        return []
    labs = sorted(p.name for p in (root / "notebooks").iterdir() if (p / f"{p.name}.ipynb").is_file())
    found = [f"{lab}: no {lang} edition (make release names its entries to translate)"
             for lab in labs if not (root / notebooks_dir(lang) / lab / f"{lab}.ipynb").is_file()]
    found += [f"{PACK_README.name}: {entry}" for entry in documents.problems_now(PACK_README, lang)]
    if not PACK_README.edition_path(lang).is_file():
        found.append(f"{PACK_README.edition_path(lang).relative_to(ROOT)} is missing: make release")
    return found


def _edition_makefile(data: bytes, lang: str) -> bytes:
    """The pack's Makefile, whose ``make lab`` opens the edition ``lang`` (the same recipes)."""
    default = b"EDITION ?= en\n"
    assert data.count(default) == 1, "the pack Makefile's EDITION default has moved"
    return data.replace(default, f"EDITION ?= {lang}\n".encode())


def build(out: Path, root: Path = ROOT, lang: str = "en") -> Path:
    """Write the edition ``lang``'s pack to ``out`` (``.tar.gz``), every file under
    :func:`pack_name`; SystemExit naming what is missing when that edition is not complete."""
    found = refusals(root, lang)
    if found:
        raise SystemExit(f"the {lang} learner pack cannot be built:\n  " + "\n  ".join(found))
    out.parent.mkdir(parents=True, exist_ok=True)
    now = int(time.time())
    with tarfile.open(out, "w:gz") as tar:
        for name, source in sorted(pack_files(root, lang).items()):
            data = source.read_bytes()
            if name == "Makefile" and lang != "en":
                data = _edition_makefile(data, lang)
            info = tarfile.TarInfo(f"{pack_name(lang)}/{name}")
            info.size, info.mtime, info.uname, info.gname = len(data), now, "", ""
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--edition", choices=EDITIONS, default="en")
    parser.add_argument("--out", help="default: build/<pack name>.tar.gz")
    args = parser.parse_args(argv)
    name = pack_name(args.edition)
    out = build(Path(args.out or ROOT / "build" / f"{name}.tar.gz"), lang=args.edition)
    with tarfile.open(out) as tar:
        count = len(tar.getmembers())
    print(f"[learner-pack] {out} ({count} files, {out.stat().st_size / 1e6:.1f} MB): "
          f"tar xzf {out.name} && cd {name} && make setup && make lab")
    return 0


if __name__ == "__main__":
    sys.exit(main())
