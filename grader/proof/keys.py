"""The key of one grading in a proof: a digest of everything that can change what runs or how.

A grading is one submission autograded against one lab's template under the course's grading
recipe. Its key is built from named parts, each a digest of its own (:class:`Parts`), so a
changed input names the part it changed:

``submission``  the submission's cells as graded: code cells with their nbgrader metadata,
                other cells by their nbgrader metadata only (prose and outputs cannot change
                an autograde score, so a prose edit costs no grading), and its edition when
                it is not English (its kernel runs in that language);
``template``    the lab's solution folder as nbgrader uses it (notebooks normalised the same way,
                the author's own files such as ``mutants.yaml`` left out: nbgrader never copies
                them), and the cells left out;
``recipe``      the grading code (every module of ``grader/`` that the grading entry points
                import, found by reading their imports, so a new module cannot be forgotten),
                nbgrader's configuration, the sandbox's files, the sandbox's allow-lists and
                limits, the kernel's environment and the grading options;
``raylab``      every file of ``src/raylab`` (modules and package data) that a kernel of the
                submission's edition reads: the message catalogues ``locale/<lang>*.po`` of its
                language only (:mod:`raylab.i18n` opens no catalogue in English), so a
                translation costs the gradings of its own edition and no other;
``environment`` the course environment's distributions (``requirements.txt`` and what they
                require) with the file hashes pip recorded, and the Python build;
``machine``     the machine class, not its speed: OS release, kernel release, cgroup version,
                CPU architecture, core count, GPUs;
``schema``      :data:`SCHEMA`, this builder's own version.

Developer tools (``requirements-dev.txt``) and the hub (``requirements-instructor.txt``) are not
part of the course environment, so pinning a test tool changes no key.
"""
from __future__ import annotations

import ast
import dataclasses
import functools
import re
from dataclasses import dataclass
from pathlib import Path

import nbformat

from grader.grading import edition
from grader.grading.course import AUTHOR_ONLY
from grader.proof import environment
from grader.proof.digests import digest
from grader.proof.machine import machine_class

# Raise when the meaning of a part changes (a new part, another normalisation): every key changes.
SCHEMA = 2

ROOT = Path(__file__).resolve().parents[2]
# The entry points of a grading: the function that grades (grader.grading.autograde), the templates it is
# graded against (grader.grading.templates) and the nbgrader configuration nbgrader loads itself.
RECIPE_ENTRIES = ("grader/grading/autograde.py", "grader/grading/templates.py", "grader/grading/nbgrader_config.py")
# Files a grading reads that are not Python modules: nbgrader's root configuration (it loads the
# one above) and the sandbox's entry script.
RECIPE_FILES = ("nbgrader_config.py", "grader/grading/sandbox")
SKIPPED_PARTS = {"__pycache__", ".ipynb_checkpoints", ".pytest_cache"}


# --- notebooks and folders ---------------------------------------------------------------------

def normalised_cells(nb) -> list:
    """What of a notebook can change an autograde score: each code cell's source and nbgrader
    metadata, and the type and nbgrader metadata of every other cell (not its text)."""
    cells = []
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.cell_type == "code":
            cells.append(["code", cell.source, meta])
        elif meta.get("grade") or meta.get("solution"):  # a written answer: nbgrader keeps its text
            cells.append([cell.cell_type, meta])
        else:  # a locked prose cell's checksum is a digest of its text: prose again
            cells.append([cell.cell_type, {k: v for k, v in meta.items() if k != "checksum"}])
    return cells


def notebook_digest(data: bytes) -> str:
    """:func:`normalised_cells` of a notebook file's bytes (bytes as they are if unreadable), with
    the edition of one that is not English: the digest of an English notebook is what it always was."""
    try:
        nb = nbformat.reads(data.decode("utf-8"), as_version=4)
    except Exception:  # noqa: BLE001 - an unreadable notebook is keyed by its bytes
        return digest(data)
    lang = edition.language(nb)
    return digest(normalised_cells(nb) if lang == "en" else {"cells": normalised_cells(nb), "edition": lang})


def notebook_language(data: bytes) -> str:
    """The edition a notebook file is marked with (English if unreadable or unmarked)."""
    try:
        return edition.language(nbformat.reads(data.decode("utf-8"), as_version=4))
    except Exception:  # noqa: BLE001 - an unreadable notebook is graded as English
        return "en"


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*")
                  if p.is_file() and not SKIPPED_PARTS & set(p.relative_to(folder).parts)
                  and p.suffix != ".pyc")


def folder_digest(folder: Path, skipped_names=()) -> str:
    """Every file below ``folder`` by its path (but ``skipped_names``); notebooks normalised, other
    files byte for byte."""
    parts = {}
    for path in _files(folder):
        if path.name in skipped_names:
            continue
        data = path.read_bytes()
        parts[str(path.relative_to(folder))] = notebook_digest(data) if path.suffix == ".ipynb" else digest(data)
    return digest(parts)


def raylab_digest(folder: Path, lang: str) -> str:
    """:func:`folder_digest` of raylab as a kernel speaking ``lang`` reads it: without the message
    catalogues of other languages (``locale/<lang>.po``, ``locale/<lang>-<domain>.po``)."""
    others = {p.name for p in (folder / "locale").glob("*.po") if p.stem.split("-", 1)[0] != lang}
    return folder_digest(folder, skipped_names=others)


# --- the recipe ---------------------------------------------------------------------------------

def imported_names(path: Path) -> set[str]:
    """Dotted names a module imports (``from grader import x`` gives ``grader.x`` and ``grader``)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
    return names


def recipe_modules(root: Path = ROOT, entries=RECIPE_ENTRIES) -> list[str]:
    """The grader modules a grading runs: the entry points and every module of ``grader/`` they
    import, transitively, with the packages' ``__init__`` files that importing them runs.
    ``grader/grading/nbgrader_config.py`` puts its own folder on ``sys.path``, so a bare
    ``nbgrader_ext`` is the module beside the file that imports it."""
    todo, seen = [root / e for e in entries], set()
    while todo:
        path = todo.pop()
        if path in seen or not path.exists():
            continue
        seen.add(path)
        for name in imported_names(path):
            parts = name.split(".")
            base = root if parts[0] == "grader" else path.parent
            for depth in range(1, len(parts) + 1):
                module = base.joinpath(*parts[:depth])
                todo += [module.with_suffix(".py"), module / "__init__.py"]
    return sorted(str(p.relative_to(root)) for p in seen)


def recipe_files(root: Path = ROOT) -> dict[str, str]:
    """path -> digest of every file of the recipe (modules and the other files it reads)."""
    files = {m: digest((root / m).read_bytes()) for m in recipe_modules(root)}
    for name in RECIPE_FILES:
        path = root / name
        for p in (_files(path) if path.is_dir() else [path]):
            files[str(p.relative_to(root))] = digest(p.read_bytes())
    return files


def recipe_settings(options) -> dict:
    """The settings a grading runs under, as the code defines them now: the grading options, the
    sandbox's allow-lists and limits, the kernel's environment (the course root written as
    ``<root>``: a clone elsewhere grades the same way), the sandbox and network isolation."""
    from grader.grading import course, isolation

    def text(value):
        return str(value).replace(str(course.ROOT), "<root>")

    return {"options": text(dataclasses.asdict(options)),
            "system_binds": list(isolation.SYSTEM_BINDS),
            "passed_env": [list(isolation.PASSED_NAMES), list(isolation.PASSED_PREFIXES)],
            "kernel_env": {k: text(v) for k, v in sorted(isolation.kernel_env().items())},
            "limits": dataclasses.asdict(isolation.Limits()),
            "sandbox": isolation.available()[0] if options.sandbox is None else options.sandbox,
            "network_isolated": options.isolate_network and course.can_isolate_network()}


# --- keys ---------------------------------------------------------------------------------------

class Keyed:
    """A dataclass of named digests whose key is the digest of them all."""

    @property
    def key(self) -> str:
        return digest(dataclasses.asdict(self))


@dataclass(frozen=True)
class Parts(Keyed):
    """The digests a key is made of (see the module's docstring)."""
    submission: str
    template: str
    recipe: str
    raylab: str
    environment: str
    machine: str
    schema: int = SCHEMA


class KeyBuilder:
    """Keys of gradings of one course tree (``root``), computed once per part and reused."""

    def __init__(self, options, root: Path = ROOT):
        self.root, self.options = Path(root), options

    @functools.cached_property
    def recipe(self) -> str:
        return digest({"files": recipe_files(self.root), "settings": recipe_settings(self.options)})

    @functools.lru_cache(maxsize=8)
    def raylab(self, lang: str) -> str:
        return raylab_digest(self.root / "src" / "raylab", lang)

    @functools.cached_property
    def environment(self) -> str:
        return digest(environment.environment_parts(self.root))

    @functools.cached_property
    def machine(self) -> str:
        return digest(machine_class())

    @functools.lru_cache(maxsize=64)
    def solution(self, lab: str) -> str:
        return folder_digest(self.root / "solutions" / lab, skipped_names=AUTHOR_ONLY)

    def parts(self, lab: str, notebook: bytes, left_out) -> Parts:
        return Parts(submission=notebook_digest(notebook),
                     template=digest([lab, self.solution(lab), sorted(left_out)]),
                     recipe=self.recipe, raylab=self.raylab(notebook_language(notebook)),
                     environment=self.environment,
                     machine=self.machine)
