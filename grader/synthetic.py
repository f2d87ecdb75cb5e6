"""Synthetic class submissions for tests and benchmarks, built from the course's own notebooks.

Well-behaved kinds come from the solution and the mutants; adversarial kinds reproduce what breaks
batch grading in real classes (bad files, dying kernels, endless loops, tampering, snooping).
"""
from __future__ import annotations

from pathlib import Path

import nbformat

from grader import mutants

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
    solution = mutants.answer_sources(lab)
    first = next(iter(solution))
    rounds = mutants.rounds(lab)
    for student, kind in students.items():
        dest = submissions / student / lab / f"{lab}.ipynb"
        answers = dict(solution)
        if kind == "solution":
            _write(dest, mutants.submission(lab, answers))
        elif kind == "untouched":
            _write(dest, mutants.submission(lab, None))
        elif kind.startswith("mutants"):
            _write(dest, mutants.submission(lab, mutants.round_answers(lab, rounds[int(kind[7:])])))
        elif kind == "invalid_json":
            _write(dest, raw='{"cells": [')
        elif kind == "not_a_notebook":
            _write(dest, raw='{"hello": "world"}')
        elif kind == "no_notebook":
            (dest.parent / "answers.txt").parent.mkdir(parents=True, exist_ok=True)
            (dest.parent / "answers.txt").write_text("I forgot the notebook")
        elif kind in _ADVERSARIAL_CODE:
            answers[first] = _ADVERSARIAL_CODE[kind] + "\n\n" + answers[first]
            _write(dest, mutants.submission(lab, answers))
        elif kind == "tamper":  # wrong answers, and every later cell wrapped in try/except: pass
            answers = mutants.round_answers(lab, rounds[0])
            answers[first] = ("def _wrap(lines):\n"
                              "    return ['try:\\n'] + ['    ' + l for l in lines] + "
                              "['\\nexcept BaseException:\\n    pass\\n']\n"
                              "get_ipython().input_transformers_post.append(_wrap)\n\n" + answers[first])
            _write(dest, mutants.submission(lab, answers))
        elif kind == "snoop":
            p = {k: str(v) for k, v in (paths or {}).items()}
            reads = [r.format(**p) for r in SNOOP_READS]
            writes = [w.format(**p) for w in SNOOP_WRITES]
            answers[first] += (
                "\n\nimport os as _os\n_found = {}\n"
                f"for _t in {reads!r}:\n"
                "    try:\n        open(_t, 'rb').read(10); _found[_t] = 'READ'\n"
                "    except Exception as _e:\n        _found[_t] = type(_e).__name__\n"
                f"for _t in {writes!r}:\n"
                "    try:\n        open(_t, 'w').write('x'); _found[_t] = 'WROTE'\n"
                "    except Exception as _e:\n        _found[_t] = type(_e).__name__\n"
                "print('SNOOP', _os.getuid(), _found)\n")
            _write(dest, mutants.submission(lab, answers))
        elif kind == "deleted_test_cell":
            nb = mutants.submission(lab, answers)
            nb.cells = [c for c in nb.cells if not c.metadata.get("nbgrader", {}).get("grade")][:]
            _write(dest, nb)
        elif kind == "test_cell_edited":
            nb = mutants.submission(lab, mutants.round_answers(lab, rounds[0]))
            for c in nb.cells:
                if c.metadata.get("nbgrader", {}).get("grade"):
                    c.source = "pass  # tests removed by the learner"
            _write(dest, nb)
        elif kind == "cell_type_changed":
            nb = mutants.submission(lab, answers)
            for c in nb.cells:
                if c.metadata.get("nbgrader", {}).get("grade"):
                    c.cell_type, c.outputs, c.execution_count = "markdown", None, None
                    del c["outputs"], c["execution_count"]
                    break
            _write(dest, nb)
        elif kind == "duplicated_test_cell":
            nb = mutants.submission(lab, answers)
            tests = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
            nb.cells.append(nbformat.from_dict(dict(tests[0])))
            _write(dest, nb)
        else:
            raise ValueError(f"unknown submission kind {kind!r}")
