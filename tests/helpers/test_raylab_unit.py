"""Unit tests of the raylab helper package (fast: no Ray cluster)."""
import math
import os
import subprocess
import sys
import time

import pytest

import raylab
from raylab import child_process, data, env, models
from raylab.checks import common as checks


def test_version_is_pinned_to_the_ray_release():
    assert raylab.__version__.startswith(raylab.RAY_VERSION + ".")


def test_check_messages_say_what_is_wrong_and_where_to_look():
    with pytest.raises(checks.CheckFailed) as info:
        checks.check_equal(3, 2, "logical CPUs", hint="reread section 2")
    assert "logical CPUs: expected 2, got 3." in str(info.value)
    assert "Hint: reread section 2" in str(info.value)
    assert isinstance(info.value, AssertionError)  # nbgrader and pytest treat it as a failed check


def test_check_close_rejects_non_numbers_and_bools():
    checks.check_close(1.0 + 1e-12, 1.0, "x")
    for bad in (True, "1.0", None):
        with pytest.raises(checks.CheckFailed):
            checks.check_close(bad, 1.0, "x")
    with pytest.raises(checks.CheckFailed):
        checks.check_close(1.1, 1.0, "x")


def test_check_keys_and_type():
    checks.check_keys({"a": 1, "b": 2}, ["a"], "d")
    with pytest.raises(checks.CheckFailed, match=r"missing the key\(s\) \['c'\]"):
        checks.check_keys({"a": 1}, ["a", "c"], "d")
    with pytest.raises(checks.CheckFailed, match="should be a dict"):
        checks.check_keys([1], ["a"], "d")


def test_check_raises_reports_wrong_or_missing_exception():
    exc = checks.check_raises(ValueError, lambda: int("x"), "parse")
    assert isinstance(exc, ValueError)
    with pytest.raises(checks.CheckFailed, match="nothing was raised"):
        checks.check_raises(ValueError, lambda: 1, "parse")
    with pytest.raises(checks.CheckFailed, match="got ZeroDivisionError"):
        checks.check_raises(ValueError, lambda: 1 / 0, "parse")


def test_regression_data_is_deterministic_and_indexed():
    a, b = data.regression(n=64, d=4, seed=3), data.regression(n=64, d=4, seed=3)
    assert len(a) == 64
    idx, x, y = a.tensors
    assert idx.tolist() == list(range(64))
    assert (x == b.tensors[1]).all() and (y == b.tensors[2]).all()
    assert not (x == data.regression(n=64, d=4, seed=4).tensors[1]).all()


def test_blobs_labels_cycle_through_classes_and_split_is_deterministic():
    ds = data.blobs(n=30, classes=3)
    assert sorted(set(ds.tensors[2].tolist())) == [0, 1, 2]
    tr1, va1 = data.split(ds, 0.2, seed=1)
    tr2, va2 = data.split(ds, 0.2, seed=1)
    assert list(va1.indices) == list(va2.indices) and len(va1) == 6 and len(tr1) == 24


def test_models_are_seeded_and_checksum_unwraps_module():
    m1, m2 = models.mlp(seed=5), models.mlp(seed=5)
    assert models.param_checksum(m1) == models.param_checksum(m2)
    assert models.param_checksum(m1) != models.param_checksum(models.mlp(seed=6))

    class Wrapper:  # DDP-like: the real model sits in .module
        module = m1

    assert models.param_checksum(Wrapper()) == models.param_checksum(m1)
    assert math.isfinite(models.param_checksum(models.linear()))


def test_scratch_dir_is_absolute_and_fresh_dirs_differ(tmp_path, monkeypatch):
    monkeypatch.setenv("RAYLAB_SCRATCH", str(tmp_path))
    a = raylab.scratch_dir("lab", "run", fresh=True)
    b = raylab.scratch_dir("lab", "run", fresh=True)
    assert a.is_absolute() and a.exists() and a != b
    assert a.parent == tmp_path / "lab"


def test_grading_mode_follows_nbgrader_variable(monkeypatch):
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    assert not raylab.grading_mode()
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    assert raylab.grading_mode()


def test_run_snippet_returns_output_and_env():
    res = child_process.run_snippet("import os; print(os.environ['RAYLAB_T'])", timeout_s=30,
                              env={"RAYLAB_T": "hello"})
    assert res.returncode == 0 and res.stdout.strip() == "hello" and not res.timed_out


def test_run_snippet_kills_the_whole_process_group_at_the_limit(tmp_path):
    pidfile = tmp_path / "child.pid"
    code = f"""
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        open({str(pidfile)!r}, "w").write(str(child.pid))
        time.sleep(600)
    """
    start = time.monotonic()
    res = child_process.run_snippet(code, timeout_s=3)
    assert res.timed_out and time.monotonic() - start < 20
    child = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail("the grandchild survived the time limit")


def test_environment_check_passes_here_and_reads_ray_metadata():
    rows = {name: ok for name, ok, _ in env.checks()}
    assert all(rows.values()), rows
    extras = env.ray_extra_requirements("train")
    assert "pandas" in extras and "torch" not in extras
    assert subprocess.run([sys.executable, "-m", "raylab.env"], capture_output=True).returncode == 0


def test_route_stderr_to_stdout_moves_python_and_fd_level_writes():
    code = """
        import logging, os, sys, warnings
        handler = logging.StreamHandler()          # created before routing: holds the old stderr
        logging.getLogger("demo").addHandler(handler)
        from raylab.cluster import route_stderr_to_stdout
        route_stderr_to_stdout()
        print("py-stderr", file=sys.stderr)
        warnings.warn("a warning")
        logging.getLogger("demo").warning("a log line")
        sys.stdout.flush()
        os.write(2, b"fd-level\\n")
    """
    res = child_process.run_snippet(code, timeout_s=30)
    assert res.returncode == 0, res.stderr
    assert res.stderr == ""
    for text in ("py-stderr", "a warning", "a log line", "fd-level"):
        assert text in res.stdout


def test_plots_are_labelled():
    from raylab import plots

    ax = plots.curves({"rank 0": [1, 0.5, 0.2], "rank 1": [(0, 1.1), (1, 0.4)]}, title="t",
                      xlabel="epoch", ylabel="loss")
    assert ax.get_title() == "t" and ax.get_xlabel() == "epoch" and len(ax.lines) == 2
    ax = plots.bars({1: 10.0, 2: 18.0}, title="b", xlabel="workers", ylabel="samples/s")
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2"]


def test_start_cluster_retries_once_when_the_node_times_out_during_startup(monkeypatch):
    """Ray 2.58.0 gives the raylet a fixed 30 s to register; on a busy machine start_cluster tries
    a second time. Any other error, or a second time-out, reaches the caller unchanged."""
    import ray

    import raylab.cluster as cluster

    calls = []

    def flaky_init(**kwargs):
        calls.append(kwargs)
        if len(calls) == 1:
            raise Exception("The current node timed out during startup. This could happen ...")
        return "context"

    monkeypatch.setattr(ray, "init", flaky_init)
    monkeypatch.setattr(ray, "shutdown", lambda: None)
    assert cluster.start_cluster(quiet=False) == "context"
    assert len(calls) == 2 and calls[0] == calls[1]

    calls.clear()
    monkeypatch.setattr(ray, "init", lambda **kw: (_ for _ in ()).throw(ValueError("bad argument")))
    with pytest.raises(ValueError, match="bad argument"):
        cluster.start_cluster(quiet=False)

    def always_slow(**kwargs):
        calls.append(kwargs)
        raise Exception("The current node timed out during startup.")

    monkeypatch.setattr(ray, "init", always_slow)
    with pytest.raises(Exception, match="timed out during startup"):
        cluster.start_cluster(quiet=False)
    assert len(calls) == cluster.START_ATTEMPTS



def test_start_cluster_removes_what_a_failed_init_started(monkeypatch):
    """A refused or timed-out ray.init can leave a half-started head behind (GCS, monitor);
    start_cluster kills the processes it started before passing the error on."""
    import subprocess
    import sys

    import ray

    import raylab.cluster as cluster

    started = []

    def init_that_leaves_a_process(**kwargs):
        started.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]))
        raise ValueError("object store too small")

    monkeypatch.setattr(ray, "init", init_that_leaves_a_process)
    monkeypatch.setattr(ray, "shutdown", lambda: None)
    with pytest.raises(ValueError, match="too small"):
        cluster.start_cluster(quiet=False)
    assert len(started) == 1
    assert started[0].wait(timeout=10) is not None  # killed, not left running

def test_env_vars_sets_for_the_block_and_restores_old_values(monkeypatch):
    monkeypatch.setenv("RAYLAB_T_KEEP", "old")
    monkeypatch.delenv("RAYLAB_T_NEW", raising=False)
    with pytest.raises(RuntimeError):
        with raylab.env_vars(RAYLAB_T_KEEP=1, RAYLAB_T_NEW="x"):
            assert os.environ["RAYLAB_T_KEEP"] == "1" and os.environ["RAYLAB_T_NEW"] == "x"
            raise RuntimeError("the block fails: the environment must still come back")
    assert os.environ["RAYLAB_T_KEEP"] == "old" and "RAYLAB_T_NEW" not in os.environ


def test_environment_check_flags_the_slow_jsonschema_import(monkeypatch):
    import importlib.util

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(env, "installed_version", lambda dist: "4.26.0" if dist == "jsonschema" else None)
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: object() if name == "rfc3987_syntax" else real_find_spec(name, *a))
    name, ok, detail = env.slow_ray_import_check()
    assert not ok and "rfc3987-syntax" in detail and "4.23.0" in detail
    monkeypatch.setattr(env, "installed_version", lambda dist: "4.23.0")
    assert env.slow_ray_import_check()[1]
