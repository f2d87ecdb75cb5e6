"""The heavy test modules' results in the ledger (``ledger/tests.json``), keyed like gradings.

The other heavy groups of the suite (claims on a real cluster, the class grader and the grading
attacks, the hub and browser tests, the Ray helpers) are test modules that start clusters,
hubs or browsers. Each module whose tests are marked slow or browser (found by reading it, so a
new one cannot be left out) gets a key: a digest of

- the module itself and ``tests/conftest.py``;
- the tree it can read: the course package (``src/``) and its install files, and every other
  top-level folder or file of the tree (``grader``, ``solutions``, ``notebooks``, ``workshop``,
  ``scripts``, ``Makefile``, ...) whose name the module's text mentions; never the other test
  modules; prose (``docs/``, ``*.md``) only for a module that names README or ``docs/``, the
  labs' ledger only for one that reads round trips or the ledger;
- the whole installed environment (every distribution with its recorded file hashes: test tools
  and the hub included), the system's packages (Debian's package list: Chromium, Node) and the
  Python build;
- the machine class and the schema (``grader/proof/keys.py``).

``make prove`` runs every such module with no cache and records the modules that passed whole;
``make test`` leaves out a module whose key the ledger holds, unless this run audits it (the
same rotation and random picks as gradings, ``grader/proof/audit.py``): an audited module runs
and must pass again.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from grader.proof import keys
from grader.proof.digests import digest
from grader.proof.environment import canonical, distribution_digest
from grader.proof.keys import ROOT, SCHEMA, Keyed
from grader.proof.machine import machine_class

LEDGER_FILE = ROOT / "ledger" / "tests.json"
HEAVY_MARK = re.compile(r"pytest\.mark\.(slow|browser)\b")
# Test modules with a ledger of their own: the round trips (ledger/<lab>.json) and the ledger's tests.
NOT_CACHED = {"tests/grader/test_autograde_roundtrip.py", "tests/labs/test_quiz.py",
              "tests/grader/test_proof_ledger.py"}
PROSE = re.compile(r"^(docs/|ledger/|[^/]*\.md$)")


def cached_modules(root: Path = ROOT) -> list[str]:
    """Test modules whose result the ledger may hold: those with a slow or browser test."""
    return sorted(str(p.relative_to(root)) for p in (root / "tests").rglob("test_*.py")
                  if HEAVY_MARK.search(p.read_text()) and str(p.relative_to(root)) not in NOT_CACHED)


def tree_files(root: Path = ROOT) -> list[str]:
    """Every file git tracks or would track (untracked but not ignored) in this tree."""
    out = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                         capture_output=True, check=True, timeout=120).stdout
    return sorted({f for f in out.decode().split("\0") if f and (root / f).is_file()})


# Top-level paths every module's key covers: the course package and how it is installed.
# (nbgrader_config.py is nbgrader's entry to the course's configuration: tiny, and read by any run.)
ALWAYS = ("src/", "pyproject.toml", "requirements", "constraints.txt", "nbgrader_config.py", "tests/conftest.py")


def _mentioned(top: str, text: str) -> bool:
    """Whether a module's text names a top-level path: a folder by its name, a file by its stem
    (``environment.yml``: environment), the Makefile also by a ``make`` command."""
    if top == "Makefile":
        return re.search(r"\bmake\b|Makefile", text) is not None
    stem = top if top.startswith(".") else top.split(".")[0]
    return re.search(r"(?<![\w.])" + re.escape(stem) + r"\b", text) is not None


def module_inputs(module: str, files: list[str], root: Path = ROOT) -> list[str]:
    """The files of the tree a module's key covers (see the module docstring): the module, the
    course package and its environment files, and every other top-level folder or file of the
    tree whose name the module's text mentions (``from grader import ...``, ``ROOT / "scripts"``,
    ``solutions``, ``workshop/``, ``make``...) and, for a file so named, what it names in turn
    (the Makefile's targets run ``grader``, ``scripts``...); never prose unless named,
    the ledger only for a module that reads it, other test modules never."""
    text = (root / module).read_text()
    keep_prose = "README" in text or "docs/" in text
    keep_ledger = "round_trips" in text or "ledger" in text
    tops = {f.split("/")[0] for f in files}
    named = {top for top in tops if _mentioned(top, text)}
    # a named top-level file brings what it names (the Makefile's targets run grader/, scripts/...)
    grown = True
    while grown:
        more = {t for f in named if f in files for t in tops if _mentioned(t, (root / f).read_text(errors="replace"))}
        grown = bool(more - named)
        named |= more
    chosen = []
    for f in files:
        top = f.split("/")[0]
        if f.startswith("tests/"):
            if f in (module, "tests/conftest.py") or not f.endswith(".py"):
                chosen.append(f)
        elif f.startswith("ledger/"):
            if keep_ledger and f != "ledger/tests.json":
                chosen.append(f)
        elif PROSE.match(f):
            if keep_prose:
                chosen.append(f)
        elif f.startswith(ALWAYS) or top in named:
            chosen.append(f)
    return chosen


# Not inputs of a test: the course package (its files are in the tree) and the installer, which
# `make setup` upgrades to the newest release and no test imports.
NOT_ENVIRONMENT = {"raylab", "pip"}


def _distributions() -> dict:
    from importlib import metadata

    return {canonical(d.metadata["Name"]): distribution_digest(d) for d in metadata.distributions()
            if d.metadata["Name"] and canonical(d.metadata["Name"]) not in NOT_ENVIRONMENT}


def system_packages() -> str:
    """Debian's installed packages and their versions (Chromium, Node, libraries)."""
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${Version}\n"], capture_output=True,
                             text=True, timeout=120).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    return digest(sorted(out.splitlines()))


@dataclass(frozen=True)
class ModuleParts(Keyed):
    module: str
    tree: str
    environment: str
    system: str
    machine: str
    schema: int = SCHEMA


def module_parts(modules=None, root: Path = ROOT) -> dict[str, ModuleParts]:
    """module -> the parts of its key, for every cached module (or those given)."""
    files = tree_files(root)
    hashes = {f: digest((root / f).read_bytes()) for f in files}
    environment = digest({"python": [sys.version, sys.implementation.cache_tag], "distributions": _distributions()})
    system, machine = system_packages(), digest(machine_class())
    return {m: ModuleParts(m, digest({f: hashes[f] for f in module_inputs(m, files, root)}), environment, system, machine)
            for m in (modules or cached_modules(root))}


# --- the ledger of test modules ----------------------------------------------------------------

def read(path: Path = LEDGER_FILE) -> dict:
    """key -> entry ({module, parts, tests, skipped, seconds}) as committed."""
    if not Path(path).exists():
        return {}
    data = json.loads(Path(path).read_text())
    return data["modules"] if data.get("schema") == SCHEMA else {}


def write(entries: dict, commit: str, path: Path = LEDGER_FILE) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    ordered = dict(sorted(entries.items(), key=lambda kv: kv[1]["module"]))
    path.write_text(json.dumps({"schema": SCHEMA, "written_by": "make prove", "commit": commit,
                                "modules": ordered}, indent=1) + "\n")
    return path


def outcomes(junit_xml: str) -> dict:
    """module -> {tests, failed, skipped, seconds} from pytest's JUnit XML (xunit1: each case names its file)."""
    found = {}
    for case in ET.fromstring(junit_xml).iter("testcase"):
        module = case.get("file")
        if not module:
            continue
        seen = found.setdefault(module, {"tests": 0, "failed": 0, "skipped": 0, "seconds": 0.0})
        seen["tests"] += 1
        seen["seconds"] = round(seen["seconds"] + float(case.get("time", 0)), 1)
        if case.find("failure") is not None or case.find("error") is not None:
            seen["failed"] += 1
        elif case.find("skipped") is not None:
            seen["skipped"] += 1
    return found


def prove(modules=None, pytest_args=("-n", "2", "--dist", "loadscope", "--no-loadscope-reorder")) -> tuple[dict, str]:
    """Run the modules with no cache; (key -> entry of each module that passed whole, pytest's tail)."""
    import tempfile

    parts = module_parts(modules)
    with tempfile.TemporaryDirectory(prefix="prove-tests-") as tmp:
        xml = Path(tmp) / "junit.xml"
        run = subprocess.run([sys.executable, "-m", "pytest", *parts, *pytest_args, "-p", "no:cacheprovider",
                              f"--junitxml={xml}", "-o", "junit_family=xunit1", "-q"], cwd=ROOT,
                             capture_output=True, text=True,
                             env={**os.environ, "RAYLAB_PROOF_PLAN": ""})
        results = outcomes(xml.read_text()) if xml.exists() else {}
    entries = {}
    for module, p in parts.items():
        seen = results.get(module)
        if seen and not seen["failed"] and seen["tests"] > seen["skipped"]:
            entries[p.key] = {"module": module, "parts": dataclasses.asdict(p), **seen}
    return entries, (run.stdout + run.stderr)[-4000:]
