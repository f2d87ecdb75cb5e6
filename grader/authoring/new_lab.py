"""``make new-lab NAME=11_topic``: the skeleton of a new lab, and the checklist to finish it.

Writes ``solutions/<NAME>/<NAME>.ipynb`` (title, time line, setup, one exercise with its visible
and hidden tests, teardown: the shape docs/authoring.md describes) and ``solutions/<NAME>/mutants.yaml``
with two mutants of that exercise, then prints what is left to do. The mutants file marks the lab
in progress (``grader.authoring.lab_status``): until the author deletes that line, the last step, the fast
tests check the lab as a draft and nothing offers it to learners. The skeleton already passes the
fast tests and its own round trip (``make prove LAB=<NAME>``), so each step after this one can be
proven as it is made.
"""
from __future__ import annotations

import argparse
import re
import sys

from grader.authoring import lab_status, text as notebook_text
from grader.grading import course

SKELETON = '''#%% md {short}_intro
# {number} · {title}

One paragraph: the story of this lab, and what the learner builds in it.

**You will be able to**
- ...

**Your time:** about 30 minutes (reading and exercises). **Machine time:** about 10 s on 2 CPU cores.

**Before you start:** lab 00.

#%% code {short}_setup
import raylab

lab = raylab.setup("{name}")

#%% md {short}_ex1_text
## Exercise 1: replace this with the first exercise

Write `double(x)` that returns twice `x`. (Replace with an exercise that runs the learner's Ray code.)

#%% answer {short}_double_answer
def double(x):
    ### BEGIN SOLUTION
    return 2 * x
    ### END SOLUTION

#%% tests {short}_double_tests points=1
from raylab.checks.common import check_equal, checked

# requirement: doubles_any_number
check_equal(double(3), 6, "double(3)", hint="reread exercise 1")
checked("double of a positive integer.")
### BEGIN HIDDEN TESTS
check_equal(double(-2.5), -5.0, "double(-2.5)")
### END HIDDEN TESTS

#%% md {short}_wrapup
## Key concepts
- ...

**Next:** ...

#%% code {short}_teardown
raylab.teardown()
'''

MUTANTS = '''# Realistic wrong answers for lab {number}. Format and rules: grader/proof/mutants.py.
# Delete the next line last, once the lab is proven and benched (docs/authoring.md, "Adding a lab"):
# until then make release and the workshop leave the lab out, and the tests check it as a draft.
{mark}
{short}_double_answer:
  tests: [{short}_double_tests]
  requirements:
    doubles_any_number: return twice the number given, integer or not
  mutants:
    - name: adds_two_instead
      why: confuses doubling with adding two
      breaks: [doubles_any_number]
      core: true
      replace:
        - ['return 2 * x', 'return x + 2']
    - name: integer_only
      why: rounds to an integer, which breaks on fractional input
      breaks: [doubles_any_number]
      core: false
      mistake: edge_case
      replace:
        - ['return 2 * x', 'return int(2 * x)']
'''

CHECKLIST = """Created {solution} and {mutants_file}, marked in progress ('{mark}').
Next steps (docs/authoring.md, "Adding a lab", explains each):
  1. Edit the text form: .venv/bin/python -m grader.authoring.text to-text {solution} > /tmp/{name}.txt
     then ... from-text /tmp/{name}.txt {solution}
  2. Replace the example exercise with exercises that run the learner's Ray code on the lab's
     cluster; Validate (the visible tests) must check each exercise's behaviour on one input,
     hidden tests other inputs, cluster shapes and edge cases.
  3. In {mutants_file}, list each exercise's requirements (what its prompt asks), mark them in
     the test cells (# requirement: id above the checks that enforce each) and give every
     exercise at least two realistic mutants, each naming the requirements it breaks.
  4. Tag cells that teach a claim (tags=claim:Cnn) and list the claim in grader/claims.yaml.
  5. Commit, then make prove LAB={name}: solution full marks, untouched 0, every mutant caught,
     visible catch rate >= 80 %; commit ledger/{name}.json and grader/visible_catch.json.
  6. .venv/bin/python -m grader.bench.labs {name} (<= 90 s on 2 cores): add its row to docs/workshop.md's
     per-lab table, set the header's machine time and an honest learner time.
  7. Last, remove the in-progress mark: delete '{mark}' from {mutants_file},
     then make release (it leaves labs in progress out) and make test-fast, and commit.
"""


def create(name: str) -> dict:
    if not re.fullmatch(r"\d\d_[a-z0-9_]+", name):
        raise SystemExit(f"NAME must look like 11_topic_in_snake_case, got {name!r}")
    if any(lab[:2] == name[:2] for lab in course.labs()):
        raise SystemExit(f"a lab numbered {name[:2]} exists already: {', '.join(course.labs())}")
    number, short = name[:2], f"lab{name[:2]}"
    title = name[3:].replace("_", " ").capitalize()
    solution = course.solution_path(name)
    mutants_file = course.mutants_path(name)
    solution.parent.mkdir(parents=True)
    text = SKELETON.format(number=number, short=short, title=title, name=name)
    notebook_text.write(notebook_text.from_text(text), solution)
    mutants_file.write_text(MUTANTS.format(number=number, short=short, mark=lab_status.MARK))
    return {"solution": solution.relative_to(course.ROOT), "mutants_file": mutants_file.relative_to(course.ROOT),
            "name": name, "mark": lab_status.MARK}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name", help="NN_topic, e.g. 11_ray_data")
    args = parser.parse_args(argv)
    print(CHECKLIST.format(**create(args.name)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
