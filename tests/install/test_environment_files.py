"""environment.yml (conda/Binder) and requirements.txt (pip) must say the same thing: the course
environment. The instructor's (requirements-instructor.txt: the hub) and the developers'
(requirements-dev.txt: test tools) build on it with exact pins of their own."""
import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


ENVIRONMENTS = ("requirements.txt", "requirements-instructor.txt", "requirements-dev.txt")


def _requirements(name="requirements.txt"):
    lines = (ROOT / name).read_text().splitlines()
    return [l.strip() for l in lines if l.strip() and not l.lstrip().startswith(("#", "-r "))]


def _all_requirements():
    return [r for name in ENVIRONMENTS for r in _requirements(name)]


def test_environment_yml_pip_section_equals_requirements_txt():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    assert [p for p in pip_section if p != "-e ."] == _requirements()
    assert "-e ." in pip_section  # the helper package is part of the environment
    assert "python=3.12" in env["dependencies"]  # the Python the course documents


def test_every_requirement_is_an_exact_pin_and_the_course_pins_are_there():
    reqs = _all_requirements()
    assert all(re.fullmatch(r"[A-Za-z0-9_.\-\[\],]+==[0-9][0-9A-Za-z.+]*", r) for r in reqs), reqs
    assert len(reqs) == len({r.split("==")[0] for r in reqs}), "a package pinned in two files"
    for pin in ("ray[train,tune]==2.58.0", "torch==2.13.0", "jupyterlab==4.6.6", "nbgrader==0.9.6"):
        assert pin in _requirements()
    assert "jupyterhub==6.1.1" in _requirements("requirements-instructor.txt")
    assert {"pytest==9.2.0", "nbval==0.11.0", "playwright==1.65.2"} <= set(_requirements("requirements-dev.txt"))


def test_the_environments_build_on_each_other():
    """The course environment is the base: the instructor's adds the hub, the developers' the tools."""
    assert "-r requirements.txt" in (ROOT / "requirements-instructor.txt").read_text().splitlines()
    assert "-r requirements-instructor.txt" in (ROOT / "requirements-dev.txt").read_text().splitlines()
    assert not any(l.startswith("-r") for l in (ROOT / "requirements.txt").read_text().splitlines())


def test_constraints_agree_with_requirements():
    constraints = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, version = line.split("==")
            constraints[name.lower().replace("_", "-")] = version
    assert "torch" not in constraints  # its local build tag differs per platform
    for req in _all_requirements():
        name, version = req.split("==")
        name = name.split("[")[0].lower().replace("_", "-")
        if name in constraints:
            assert constraints[name] == version, f"{name}: {constraints[name]} vs {version}"


def test_importing_ray_does_not_build_the_rfc3987_parser():
    """Every Ray process (driver, Train controller, each worker) imports jsonschema. jsonschema 4.24+
    with Jupyter's format-nongpl extra imports rfc3987-syntax, which builds an Earley parser on
    import: 1.5 s more per process, twice the start-up of a Train run on 2 cores. The pin in
    requirements.txt avoids it; this fails if an upgrade brings it back."""
    import subprocess
    import sys

    probe = "import sys, ray, ray.train; print(sorted(m for m in sys.modules if m.split('.')[0] in ('rfc3987_syntax', 'lark')))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]", f"importing Ray loads {out.stdout.strip()}: check the jsonschema pin"
