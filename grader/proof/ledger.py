"""The proof ledger: the raw result of every grading of the proof, stored under its key.

``ledger/<lab>.json`` holds, for each grading of that lab's round trip, its key
(``grader/proof/keys.py``), what it graded (the submission's name, the variants it holds, the
cells left out), the parts its key was made of, and the raw result: per cell the score, the
maximum and the first error (name, value, line, whether Validate runs that line); processes left
behind; flags; seconds. No judgement is stored: the round trip's rules judge stored and fresh
results alike every time (``grader/proof/roundtrip_rules.py``).

Only ``make prove`` writes it (:func:`write`), after grading every submission of a lab with no
cache, from a tree whose proof inputs are all committed. Nobody edits it by hand: CI recomputes
every key from the tree, and audits entries by grading them again (``grader/proof/audit.py``).
"""
from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from grader.proof.keys import ROOT, SCHEMA

LEDGER_DIR = ROOT / "ledger"


@dataclass
class Entry:
    key: str
    student: str  # the submission's name in the round trip (solution, untouched, mutants3, ...)
    variants: dict  # answer grade_id -> "mutant: name" / "right: name"
    left_out: list
    parts: dict  # the key's parts (keys.Parts), to say why a key changed
    result: dict  # raw result (see raw_result)


@dataclass
class LabLedger:
    lab: str
    entries: dict = field(default_factory=dict)  # key -> Entry
    commit: str = ""

    def get(self, key: str) -> Entry | None:
        return self.entries.get(key)

    def why_missed(self, parts: dict, student: str) -> str:
        """Which parts of a key the ledger lacks differ from the stored grading of the same name."""
        before = next((e.parts for e in self.entries.values() if e.student == student), None)
        if before is None:
            return "never graded"
        changed = [name for name, value in parts.items() if before.get(name) != value]
        return "changed: " + (", ".join(changed) or "nothing? (a key the ledger lost)")

    def seconds_of(self, student: str) -> float | None:
        """The last recorded seconds of a submission of this name (an estimate for a miss)."""
        found = [e.result.get("seconds", 0.0) for e in self.entries.values() if e.student == student]
        return max(found) if found else None


def path_of(lab: str, folder: Path | None = None) -> Path:
    return (folder or LEDGER_DIR) / f"{lab}.json"


def read(lab: str, folder: Path | None = None) -> LabLedger:
    """The lab's ledger as committed (empty when there is none, or it is of another schema)."""
    path = path_of(lab, folder)
    if not path.exists():
        return LabLedger(lab)
    data = json.loads(path.read_text())
    if data.get("schema") != SCHEMA:
        return LabLedger(lab)
    entries = {key: Entry(key, e["student"], e["variants"], e["left_out"], e["parts"], e["result"])
               for key, e in data["gradings"].items()}
    return LabLedger(lab, entries, data.get("commit", ""))


def write(ledger: LabLedger, folder: Path | None = None) -> Path:
    """Replace the lab's ledger file with exactly these entries (a key no longer made is dropped)."""
    path = path_of(ledger.lab, folder)
    path.parent.mkdir(parents=True, exist_ok=True)
    gradings = {key: {"student": e.student, "variants": e.variants, "left_out": sorted(e.left_out),
                      "parts": e.parts, "result": e.result}
                for key, e in sorted(ledger.entries.items(), key=lambda kv: (_order(kv[1].student), kv[0]))}
    data = {"lab": ledger.lab, "schema": SCHEMA, "written_by": "make prove", "commit": ledger.commit,
            "gradings": gradings}
    path.write_text(json.dumps(data, indent=1, sort_keys=False, ensure_ascii=False) + "\n")
    return path


def _order(student: str):
    """solution, solution_trimmed, untouched, mutants0, mutants1, ... mutants10 (readable diffs)."""
    digits = "".join(ch for ch in student if ch.isdigit())
    return (student.rstrip("0123456789"), int(digits) if digits else -1)


def raw_result(res: dict, errors: dict) -> dict:
    """What a grading's result holds that a judgement may read: ``res`` is
    ``grader.grading.autograde.autograde_submission``'s result, ``errors`` grade_id -> [name, value,
    line, visible] of the first error of each cell that raised."""
    raw = {"status": res["status"], "scores": {g: [s[0], s[1]] for g, s in sorted(res["scores"].items())},
           "errors": {g: list(e) for g, e in sorted(errors.items())},
           "leftover_killed": res["leftover_killed"], "flags": sorted(res["flags"]),
           "seconds": res["seconds"]}
    if res["status"] != "graded":
        raw["reason"], raw["log_tail"] = res["reason"], res["log_tail"][-3000:]
    return raw


# What an audit compares: everything but the wall time, a not-graded run's log, and an error's
# text (its name and line say which check failed; the text may hold timings or addresses).
def comparable(raw: dict) -> dict:
    return {"status": raw["status"], "scores": raw["scores"],
            "errors": {g: [e[0], e[2], e[3]] for g, e in raw["errors"].items()},
            "leftover_killed": raw["leftover_killed"], "flags": raw["flags"]}


def differences(stored: dict, fresh: dict) -> list[str]:
    """Cell-level differences between a stored raw result and a fresh one (empty: the same)."""
    a, b = comparable(stored), comparable(fresh)
    found = []
    for name in ("status", "leftover_killed", "flags"):
        if a[name] != b[name]:
            found.append(f"{name}: stored {a[name]!r}, fresh {b[name]!r}")
    for kind in ("scores", "errors"):
        for cell in sorted(set(a[kind]) | set(b[kind])):
            if a[kind].get(cell) != b[kind].get(cell):
                found.append(f"{cell} {kind[:-1]}: stored {a[kind].get(cell)}, fresh {b[kind].get(cell)}")
    return found


def uncommitted_inputs(lab: str) -> list[str]:
    """The lab's proof inputs in this tree that git has not committed: its solution folder and
    mutants, the course package, the environment's pins, the grading recipe and the code that
    builds the submissions (the ledger records the tree as committed)."""
    from grader.proof.keys import recipe_files

    paths = [f"solutions/{lab}", "src/raylab", "requirements.txt",
             "constraints.txt", "pyproject.toml", "grader/proof/roundtrip.py", "grader/proof/mutants.py", *recipe_files()]
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=all", "--", *paths],
                             capture_output=True, text=True, check=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return ["(not a git clone: the ledger records only a committed tree)"]
    return [line[3:] for line in out.splitlines() if line.strip()]


def uncommitted_tree() -> list[str]:
    """Every path of the tree with changes git has not committed (untracked ones included)."""
    out = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=all"],
                         capture_output=True, text=True, check=True, timeout=60).stdout
    return [line[3:] for line in out.splitlines() if line.strip()]


def head_commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                              text=True, check=True, timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""
