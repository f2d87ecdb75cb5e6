"""Synthetic class submissions for tests and benchmarks, built from the course's own notebooks.

Well-behaved kinds come from the solution and the mutants; adversarial kinds reproduce what breaks
batch grading in real classes (bad files, dying kernels, endless loops, tampering, snooping).
"""
from __future__ import annotations

from pathlib import Path

import nbformat

from grader.proof import mutants

# What each adversarial kind puts in the first answer cell of lab 00 (the rest is the solution).
_ADVERSARIAL_CODE = {
    "kernel_exit": "import os\nos._exit(3)",
    "infinite_loop": "while True:\n    pass",
    "huge_output": "for i in range(20_000):\n    print('spam', i)",
    "ray_shutdown": "import ray\nray.shutdown()",
    "own_cluster": ("import subprocess, sys, os\n"
                    "subprocess.Popen([os.path.join(os.path.dirname(sys.executable), 'ray'), 'start', '--head',\n"
                    "                  '--num-cpus=1', '--include-dashboard=false', '--port=0'],\n"
                    "                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)"),
}
# Reads and writes a snooping submission tries; the grader's isolation must refuse each one.
SNOOP_READS = ["{solutions}/00_lab_setup/00_lab_setup.ipynb", "{root}/.grading/gradebook.db",
               "{submissions}/solution/00_lab_setup/00_lab_setup.ipynb", "{out}/gradebook.db"]
SNOOP_WRITES = ["{out}/hacked.txt", "{root}/grader/hacked.txt"]


def _write(path: Path, nb=None, raw: str | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if raw is not None:
        path.write_text(raw)
    else:
        nbformat.write(nb, path)


def build(submissions: Path, lab: str, students: dict[str, str], *, paths: dict | None = None) -> None:
    """Write ``{student: kind}`` submissions for ``lab`` under ``submissions/<student>/<lab>/``."""
    for student, kind in students.items():
        dest = submissions / student / lab / f"{lab}.ipynb"
        if kind == "no_notebook":
            dest.parent.mkdir(parents=True, exist_ok=True)
            (dest.parent / "answers.txt").write_text("I forgot the notebook")
        elif kind in _RAW:
            _write(dest, raw=_RAW[kind])
        else:
            _write(dest, _notebook(lab, kind, paths or {}))


_RAW = {"invalid_json": '{"cells": [', "not_a_notebook": '{"hello": "world"}'}
_TAMPER = ("def _wrap(lines):\n"
           "    return ['try:\\n'] + ['    ' + l for l in lines] + ['\\nexcept BaseException:\\n    pass\\n']\n"
           "get_ipython().input_transformers_post.append(_wrap)\n\n")


def _snoop_code(paths: dict) -> str:
    p = {k: str(v) for k, v in paths.items()}
    reads, writes = [r.format(**p) for r in SNOOP_READS], [w.format(**p) for w in SNOOP_WRITES]
    return ("\n\nimport os as _os\n_found = {}\n"
            f"for _t in {reads!r}:\n"
            "    try:\n        open(_t, 'rb').read(10); _found[_t] = 'READ'\n"
            "    except Exception as _e:\n        _found[_t] = type(_e).__name__\n"
            f"for _t in {writes!r}:\n"
            "    try:\n        open(_t, 'w').write('x'); _found[_t] = 'WROTE'\n"
            "    except Exception as _e:\n        _found[_t] = type(_e).__name__\n"
            "print('SNOOP', _os.getuid(), _found)\n")


def _graded_cells(nb):
    return [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]


def _notebook(lab: str, kind: str, paths: dict):
    """The submission of one well-behaved or adversarial ``kind``."""
    answers = mutants.answer_sources(lab)
    first = next(iter(answers))
    if kind == "untouched":
        return mutants.submission(lab, None)
    if kind.startswith("mutants"):
        return mutants.submission(lab, mutants.round_answers(lab, mutants.rounds(lab)[int(kind[7:])]))
    if kind in _ADVERSARIAL_CODE:
        answers[first] = _ADVERSARIAL_CODE[kind] + "\n\n" + answers[first]
    elif kind == "tamper":  # wrong answers, and every later cell wrapped in try/except: pass
        answers = mutants.round_answers(lab, mutants.rounds(lab)[0])
        answers[first] = _TAMPER + answers[first]
    elif kind == "snoop":
        answers[first] += _snoop_code(paths)
    elif kind == "test_cell_edited":
        answers = mutants.round_answers(lab, mutants.rounds(lab)[0])
    elif kind not in ("solution", "deleted_test_cell", "cell_type_changed", "duplicated_test_cell"):
        raise ValueError(f"unknown submission kind {kind!r}")
    nb = mutants.submission(lab, answers)
    if kind == "deleted_test_cell":
        nb.cells = [c for c in nb.cells if not c.metadata.get("nbgrader", {}).get("grade")]
    elif kind == "test_cell_edited":
        for c in _graded_cells(nb):
            c.source = "pass  # tests removed by the learner"
    elif kind == "cell_type_changed":
        c = _graded_cells(nb)[0]
        c.cell_type = "markdown"
        del c["outputs"], c["execution_count"]
    elif kind == "duplicated_test_cell":
        nb.cells.append(nbformat.from_dict(dict(_graded_cells(nb)[0])))
    return nb
