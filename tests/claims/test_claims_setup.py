"""Claims of lab 00 checked against the installed Ray 2.58.0 (real local cluster, no mocks)."""
import importlib.metadata as md
import os

import pytest


def test_c01_ray_extras_do_not_install_torch():
    reqs = md.requires("ray") or []
    extra_reqs = [r for r in reqs if 'extra == "train"' in r or 'extra == "tune"' in r]
    assert extra_reqs, "Ray's metadata should list the train/tune extras"
    names = {r.split(";")[0].strip().split("[")[0].split("=")[0].split(">")[0].split("<")[0].strip().lower()
             for r in extra_reqs}
    assert "pandas" in names and "pyarrow" in names
    assert not {"torch", "tensorflow", "jax"} & names
    assert md.version("ray") == "2.58.0"


@pytest.mark.slow
def test_c32_logical_resources_and_object_store_are_not_os_limits():
    import numpy as np
    import ray

    import raylab

    raylab.start_cluster(quiet=True)
    try:
        @ray.remote(num_cpus=1)
        def look():
            return len(os.sched_getaffinity(0)), os.environ.get("OMP_NUM_THREADS")

        cores, omp = ray.get(look.remote())
        assert cores == len(os.sched_getaffinity(0))  # no pinning to the 1 CPU asked for
        assert omp == os.environ.get("OMP_NUM_THREADS", "1")  # a hint, set only when unset
        assert ray.cluster_resources()["object_store_memory"] == 80 * 1024 * 1024
        refs = [ray.put(np.full(30 * 2**20 // 8, i, dtype=np.float64)) for i in range(4)]  # 120 MiB
        assert [float(ray.get(r)[0]) for r in refs] == [0.0, 1.0, 2.0, 3.0]
    finally:
        assert raylab.stop_cluster() == []


@pytest.mark.slow
def test_c32_object_store_minimum_is_enforced():
    import ray

    from raylab.processes import descendant_pids, kill_processes, new_descendants

    before = descendant_pids()
    try:
        with pytest.raises(ValueError, match="minimum allowed"):
            ray.init(address="local", num_cpus=1, include_dashboard=False,
                     object_store_memory=70 * 1024 * 1024)
        assert not ray.is_initialized()
    finally:
        # the refused init has already started part of a head (GCS, monitor): remove it, or it
        # lives as long as this process
        kill_processes(new_descendants(before))


def _run_in_fresh_python(code: str, env: dict, unset=(), timeout: int = 240) -> str:
    """Run ``code`` in a new interpreter with ``env`` added to this one's environment: Ray's
    workers inherit the environment of the process that starts the cluster, so the variable must
    be exported before ``ray.init``, as a learner's shell would."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    full_env = {k: v for k, v in os.environ.items() if k not in unset}
    full_env.update(env)
    done = subprocess.run([sys.executable, "-c", code], env=full_env, cwd=root, text=True,
                          capture_output=True, timeout=timeout)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


@pytest.mark.slow
def test_c32_omp_num_threads_is_set_only_when_unset():
    """Ray sets OMP_NUM_THREADS to a task's whole CPU count (at least 1) only when the variable is
    not set already (ray/_private/utils.py, set_omp_num_threads_if_unset): a value exported before
    the cluster starts reaches every task unchanged."""
    code = """
import os, ray, raylab
raylab.start_cluster(quiet=True)
try:
    @ray.remote
    def look():
        return os.environ.get("OMP_NUM_THREADS")
    print({n: ray.get(look.options(num_cpus=n).remote()) for n in (0.5, 1, 2)})
finally:
    assert raylab.stop_cluster() == []
"""
    import ast

    unset = _run_in_fresh_python(code, {}, unset=("OMP_NUM_THREADS",))
    assert ast.literal_eval(unset.strip().splitlines()[-1]) == {0.5: "1", 1: "1", 2: "2"}
    exported = _run_in_fresh_python(code, {"OMP_NUM_THREADS": "3"})
    assert ast.literal_eval(exported.strip().splitlines()[-1]) == {0.5: "3", 1: "3", 2: "3"}


@pytest.mark.slow
def test_lab00_inspect_task_limits_grading_holds_with_omp_num_threads_exported():
    """A learner whose shell exports OMP_NUM_THREADS=3 gets full marks for a right answer, and the
    realistic wrong answers of solutions/00_lab_setup/mutants.yaml still fail: the exercise's answer
    cell and its whole test cell (hidden part included) run on a cluster started with the variable
    exported."""
    code = """
import json
import nbformat
import raylab
from grader.grading import course
from grader.proof import mutants
from raylab.checks.common import CheckFailed

lab = "00_lab_setup"
cells = {c.metadata["nbgrader"]["grade_id"]: c.source
         for c in nbformat.read(course.solution_path(lab), as_version=4).cells}
answer = mutants.answer_sources(lab)["inspect_task_limits_answer"]
tests = cells["inspect_task_limits_tests"]
outcome = {}
raylab.start_cluster(quiet=True)
try:
    for name, source in [("solution", answer)] + [
            (m.name, mutants.apply(answer, m))
            for m in mutants.load(lab)["inspect_task_limits_answer"].mutants]:
        namespace = {}
        exec(source, namespace)
        try:
            exec(tests, namespace)
            outcome[name] = "passed"
        except CheckFailed as exc:
            outcome[name] = "failed: " + str(exc)[:200]
finally:
    assert raylab.stop_cluster() == []
print(json.dumps(outcome))
"""
    import json

    outcome = json.loads(_run_in_fresh_python(code, {"OMP_NUM_THREADS": "3"}).strip().splitlines()[-1])
    assert outcome.pop("solution") == "passed"
    assert len(outcome) >= 4
    for name, result in outcome.items():
        assert result.startswith("failed: "), f"mutant {name} passed with OMP_NUM_THREADS=3 exported"
