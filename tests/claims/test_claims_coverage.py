"""Which claims the notebooks teach (cells tagged claim:Cnn).

Unknown ids fail. Claims without a tagged cell are reported; once every lab of a claim's range has
landed (its lab exists and is finished, grader.authoring.lab_status), a missing tag fails too.
"""
import ast
import re
from pathlib import Path

import nbformat
import yaml

from grader.authoring import lab_status
from grader.grading import course

CLAIMS = yaml.safe_load((course.ROOT / "grader" / "claims.yaml").read_text())


def _tagged():
    found = {}
    for lab in course.labs():
        for cell in nbformat.read(course.solution_path(lab), as_version=4).cells:
            for tag in cell.metadata.get("tags", []):
                m = re.fullmatch(r"claim:(C\d\d)", tag)
                if m:
                    found.setdefault(m.group(1), set()).add(lab)
    return found


def test_claim_tags_name_known_claims():
    unknown = set(_tagged()) - set(CLAIMS)
    assert not unknown, f"tags for claims that do not exist: {sorted(unknown)}"


def test_claims_of_landed_labs_are_tagged(capsys):
    tagged = _tagged()
    landed = {lab[:2] for lab in lab_status.finished_labs()}
    untaught = sorted(c for c in CLAIMS if c not in tagged)
    with capsys.disabled():
        print(f"\nclaims tagged: {len(tagged)}/{len(CLAIMS)}; not yet taught: {', '.join(untaught) or 'none'}")
    missing = [c for c in untaught if f"{int(CLAIMS[c]['lab']):02d}" in landed]
    assert not missing, f"claims whose lab exists but no cell is tagged: {missing}"


def test_each_claims_lab_is_a_lab_that_teaches_it():
    """claims.yaml's ``lab`` is where the claim is taught (a renumbering must follow it there)."""
    tagged = _tagged()
    wrong = {c: (f"{int(spec['lab']):02d}", sorted(tagged.get(c, ()))) for c, spec in CLAIMS.items()
             if c in tagged and f"{int(spec['lab']):02d}" not in {lab[:2] for lab in tagged[c]}}
    assert not wrong, f"claim -> (lab in claims.yaml, labs that tag it): {wrong}"


def _claims_with_a_test() -> set[str]:
    """Claim ids named by test functions: test_c16_c18_report_is_a_barrier covers C16 and C18."""
    found = set()
    for path in Path(__file__).parents[1].rglob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef):
                m = re.match(r"test_((?:c\d\d_)+)", node.name + "_")
                if m:
                    found |= {f"C{n}" for n in re.findall(r"c(\d\d)_", m.group(1))}
    return found


def test_every_runnable_claim_has_a_test_named_after_it():
    required = {c for c, info in CLAIMS.items() if info.get("runnable", True)}
    missing = sorted(required - _claims_with_a_test())
    assert not missing, f"claims with no test named test_cNN_...: {missing}"
