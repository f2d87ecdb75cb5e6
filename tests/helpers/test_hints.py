"""Friendly hints (``raylab.hints``), checked on errors Ray 2.58.0 really raises.

Cheap mistakes are triggered for real (no cluster). The Tune mistakes run on one shared local
cluster. Of the expensive Train failures, the controller path (too few CPUs) runs for real, bounded
by a 3 s worker-group start timeout; the worker-failure wrappers (skipped report, deleted ASYNC
checkpoint folder, missing ValidationConfig) are built from Ray's real exception classes in the
exact shape a real run produced (see RAY_FACTS.md §4, §6, §8). ``RAYLAB_HINTS_FULL=1`` runs those
three for real as well (about 90 s more).

The notebook test checks the learner's view: Ray's traceback stays an error output, and the hint
follows on stdout (never stderr, which nbgrader would score as a failure).
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import nbformat
import pytest
from nbclient import NotebookClient

from raylab import hint_rules, hints

FULL = os.environ.get("RAYLAB_HINTS_FULL") == "1"


def _raised(fn) -> BaseException:
    try:
        fn()
    except BaseException as exc:  # noqa: BLE001 - the error is the point
        return exc
    raise AssertionError("expected an error")


def _keys(exc) -> list[str]:
    return [h.key for h in hints.hints_for(exc)]


# --- cheap, real errors (no cluster) ------------------------------------------------------------

def _raise_from_file(path: str, exc: BaseException) -> BaseException:
    """``exc`` raised by code whose file name is ``path`` (a traceback through Ray's folders)."""
    namespace: dict = {}
    exec(compile("def boom(e):\n    raise e\n", path, "exec"), namespace)
    return _raised(lambda: namespace["boom"](exc))


def test_every_matcher_runs_without_raising():
    """hints_for swallows a matcher's own error (a hint must never break a traceback), so a broken
    matcher (a missing import, say) would silently never match: call each one directly."""
    samples = [ValueError("x"), RuntimeError(""), AttributeError("'str' object has no attribute 'value'"),
               _raise_from_file("/site-packages/ray/tune/impl/x.py", AttributeError("'str' object has no attribute 'value'")),
               _raise_from_file("/site-packages/ray/train/v2/x.py", FileNotFoundError("Failed to open local file"))]
    for rule in hint_rules.RULES:
        for exc in samples:
            assert rule.match(exc) in (True, False), rule.hint.key
    assert _keys(samples[3]) == ["train_runconfig_in_tuner"]
    assert _keys(samples[4]) == ["checkpoint_dir_deleted"]


def test_trainer_resources_hint():
    import ray.train as train

    exc = _raised(lambda: train.ScalingConfig(num_workers=2, trainer_resources={"CPU": 1}))
    assert type(exc) is DeprecationWarning
    assert _keys(exc) == ["trainer_resources"]
    text = hints.format_hints(exc)
    assert "trainer_resources" in text and "lab 02" in text and "resources_per_worker" in text


def test_tune_runconfig_given_to_trainer_hint():
    from ray import tune
    import ray.train as train
    from ray.train.torch import TorchTrainer

    exc = _raised(lambda: TorchTrainer(lambda: None, run_config=tune.RunConfig(name="x")))
    assert isinstance(exc, ValueError) and "Invalid `RunConfig` type" in str(exc)
    assert _keys(exc) == ["tune_config_in_trainer"]
    exc = _raised(lambda: train.RunConfig(failure_config=tune.FailureConfig(max_failures=1)))
    assert _keys(exc) == ["tune_config_in_trainer"]
    assert "lab 07" in hints.format_hints(exc)


def test_v2_trainer_passed_to_tuner_hint():
    from ray import tune
    import ray.train as train
    from ray.train.torch import TorchTrainer

    trainer = TorchTrainer(lambda: None, scaling_config=train.ScalingConfig(num_workers=1))
    exc = _raised(lambda: tune.Tuner(trainer))
    assert type(exc).__name__ == "TuneError"
    assert _keys(exc) == ["v2_trainer_in_tuner"]
    assert "function trainable" in hints.format_hints(exc)


def test_tune_report_callback_outside_tune_hint():
    from ray.tune.integration.ray_train import TuneReportCallback

    exc = _raised(TuneReportCallback)
    assert isinstance(exc, RuntimeError)
    assert _keys(exc) == ["tune_report_callback_outside_tune"]


def test_fail_fast_and_worker_api_in_notebook_hints(monkeypatch):
    import ray.train as train
    from ray import tune
    from ray.train.v2._internal.execution import train_fn_utils

    # a local-mode run earlier in this process (a test beside this one) leaves Ray's worker
    # context installed; this test is about a notebook where none ran
    monkeypatch.setattr(train_fn_utils, "_train_fn_utils", None)

    exc = _raised(lambda: train.RunConfig(callbacks=[tune.Callback()]))
    assert isinstance(exc, ValueError) and "UserCallback" in str(exc)
    assert _keys(exc) == ["tune_callback_in_train_runconfig"]

    assert _keys(_raised(lambda: train.FailureConfig(fail_fast=True))) == ["fail_fast"]
    assert _keys(_raised(lambda: train.report({"loss": 1.0}))) == ["train_api_outside_training"]


def test_validation_without_checkpoint_hint_local_mode():
    import ray.train as train
    from ray.train.torch import TorchTrainer

    def loop():
        train.report({"loss": 1.0}, validation=True)

    exc = _raised(TorchTrainer(loop, scaling_config=train.ScalingConfig(num_workers=0)).fit)
    assert isinstance(exc, ValueError)
    assert _keys(exc) == ["validation_without_checkpoint"]


@pytest.mark.slow  # starts (part of) a Ray head
def test_object_store_below_minimum_hint():
    import ray

    from raylab.processes import descendant_pids, kill_processes, new_descendants

    before = descendant_pids()
    exc = _raised(lambda: ray.init(address="local", num_cpus=1, include_dashboard=False,
                                   object_store_memory=70 * 1024 * 1024))
    left = new_descendants(before)
    try:
        assert isinstance(exc, ValueError) and "minimum allowed" in str(exc)
        assert not ray.is_initialized()
        assert _keys(exc) == ["object_store_too_small"]
        text = hints.format_hints(exc)
        assert "80 * 1024 * 1024" in text and "restarting the kernel" in text
        # what the hint says: the refused init leaves a half-started head until the process exits
        assert any(p.name() == "gcs_server" for p in left), [p.name() for p in left]
    finally:
        kill_processes(left)


def test_unrelated_errors_get_no_hint():
    for exc in (ZeroDivisionError("division by zero"), KeyError("loss"),
                FileNotFoundError(2, "No such file or directory", "data.csv"),
                AttributeError("'str' object has no attribute 'value'"),  # not raised in Tune
                ValueError("bad value")):
        assert hints.hints_for(exc) == [], exc


# --- wrapped errors, built from Ray's real classes in the shape real runs produce ----------------

def _task_error(cause: BaseException, function: str) -> BaseException:
    from ray.exceptions import RayTaskError

    return RayTaskError(function, f"Traceback ...\n{type(cause).__name__}: {cause}", cause) \
        .as_instanceof_cause()


def test_skipped_report_hint_through_worker_group_error():
    from ray.train import WorkerGroupError
    from ray.train.v2._internal.exceptions import BroadcastCollectiveTimeoutError

    inner = _task_error(BroadcastCollectiveTimeoutError(5.02, [1], 5.0),
                        "SynchronizationActor.broadcast_from_rank_zero")
    exc = WorkerGroupError("[Rank 0 Error Snippet]: ...", {0: inner})
    assert _keys(exc) == ["skipped_report"]
    assert "same number of times" in hints.format_hints(exc)


def test_deleted_checkpoint_dir_hint_through_worker_group_error():
    from ray.train import WorkerGroupError

    inner = FileNotFoundError("[Errno 2] Failed to open local file '/tmp/tmpabc'. Detail: "
                              "[errno 2] No such file or directory")
    exc = WorkerGroupError("[Rank 0 Error Snippet]: ... _upload_checkpoint_and_report", {0: inner})
    assert _keys(exc) == ["checkpoint_dir_deleted"]
    assert "TemporaryDirectory" in hints.format_hints(exc)


def test_validation_without_config_hint_through_worker_group_error():
    from ray.train import WorkerGroupError

    inner = ValueError("`validation_config` was not set on the trainer, but a validation was requested.")
    assert _keys(WorkerGroupError("[Rank 0 Error Snippet]: ...", {0: inner})) == ["validation_without_config"]


def test_too_few_cpus_hint_through_controller_error_object():
    from ray.train import ControllerError
    from ray.train.v2._internal.exceptions import WorkerGroupStartupTimeoutError

    exc = ControllerError(WorkerGroupStartupTimeoutError(num_workers=3))
    assert _keys(exc) == ["too_few_cpus"]


def test_out_of_memory_hint():
    from ray.exceptions import OutOfMemoryError

    assert _keys(_task_error(OutOfMemoryError("Task was killed due to the node running low on memory."),
                             "train_fn")) == ["out_of_memory"]


def test_chain_follows_causes_and_survives_cycles():
    inner = ValueError("Validation requires a checkpoint to be provided.")
    outer = RuntimeError("wrapper")
    outer.__cause__ = inner
    inner.__context__ = outer  # a cycle must not loop forever
    assert [type(e) for e in hint_rules.chain(outer)] == [RuntimeError, ValueError]
    assert _keys(outer) == ["validation_without_checkpoint"]


def test_every_hint_names_a_known_lab_and_prints_to_stdout(capsys):
    for rule in hint_rules.RULES:
        assert "(" in hint_rules.lab_title(rule.hint.lab), rule.hint.key  # a lab folder of the course
        assert rule.hint.render().startswith(hint_rules.PREFIX)
    assert len({r.hint.key for r in hint_rules.RULES}) == len(hint_rules.RULES)
    hints.explain(DeprecationWarning("`ray.train.ScalingConfig(trainer_resources)` is deprecated."))
    out, err = capsys.readouterr()
    assert "[raylab hint]" in out and err == ""


# --- a real local cluster: the Tune mistakes and one bounded Train failure ---------------------

@pytest.fixture(scope="module")
def cluster():
    import ray

    from raylab.cluster import start_cluster, stop_cluster

    start_cluster(quiet=False, log_to_driver=False)
    yield ray
    stop_cluster()


@pytest.mark.slow
def test_train_runconfig_given_to_tuner_hint(cluster, tmp_path):
    from ray import tune
    import ray.train as train

    def objective(config):
        tune.report({"score": config["x"]})

    tuner = tune.Tuner(objective, param_space={"x": tune.grid_search([1])},
                       run_config=train.RunConfig(name="wrong", storage_path=str(tmp_path)))
    exc = _raised(tuner.fit)
    assert isinstance(exc, AttributeError)
    assert _keys(exc) == ["train_runconfig_in_tuner"]


# A notebook cell: functions defined in __main__ are pickled by value, with the cell's globals.
_NOTEBOOK_CELL = """
import torch
from torch.distributed import is_available


class Job:
    config = {"steps": 1}


def rank_and_steps():
    return torch.distributed.is_available(), Job().config["steps"]


def rank_by_name_and_steps():
    return is_available(), Job().config["steps"]
"""


@pytest.mark.slow
def test_torch_distributed_and_a_config_attribute_cannot_be_pickled_hint(cluster):
    """Measured on Ray 2.58.0 + torch 2.13.0: cloudpickle ships a by-value function's imported
    submodules whose name parts all appear among the function's attribute names, so
    ``torch.distributed`` plus ``.config`` drags in ``torch.distributed.config``, a module object
    pickle refuses. Importing the function by name avoids it."""
    import ray

    cell = {"__name__": "__main__"}
    exec(_NOTEBOOK_CELL, cell)  # noqa: S102 - the test's own code
    exc = _raised(lambda: ray.remote(cell["rank_and_steps"]).remote())
    assert "ConfigModuleInstance" in str(exc)
    assert _keys(exc) == ["torch_distributed_config"]
    assert ray.get(ray.remote(cell["rank_by_name_and_steps"]).remote()) == (True, 1)


@pytest.mark.slow
def test_train_report_inside_tune_trial_hint(cluster, tmp_path, capsys):
    from ray import tune
    import ray.train as train

    def objective(config):
        train.report({"score": config["x"]})

    results = tune.Tuner(objective, param_space={"x": tune.grid_search([1])},
                         run_config=tune.RunConfig(name="report", storage_path=str(tmp_path))).fit()
    assert len(results.errors) == 1  # Tune records the failure instead of raising
    capsys.readouterr()
    shown = hints.explain(results)
    assert [h.key for h in shown] == ["train_report_in_tune"]
    assert "ray.tune.report" in capsys.readouterr().out


def _bounded_fit(loop, tmp_path, num_workers, env):
    import ray.train as train
    from ray.train.torch import TorchTrainer

    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        trainer = TorchTrainer(loop, scaling_config=train.ScalingConfig(num_workers=num_workers),
                               run_config=train.RunConfig(
                                   storage_path=str(tmp_path),
                                   failure_config=train.FailureConfig(controller_failure_limit=0)))
        return _raised(trainer.fit)
    finally:
        for key, value in saved.items():
            os.environ.pop(key, None) if value is None else os.environ.__setitem__(key, value)


@pytest.mark.slow
def test_too_few_cpus_hint_real_run(cluster, tmp_path):
    exc = _bounded_fit(lambda: None, tmp_path, 3, {"RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S": "3"})
    assert type(exc).__name__ == "ControllerError"
    assert type(exc.controller_failure).__name__ == "WorkerGroupStartupTimeoutError"
    assert _keys(exc) == ["too_few_cpus"]


@pytest.mark.slow
@pytest.mark.skipif(not FULL, reason="about 90 s of Train runs; set RAYLAB_HINTS_FULL=1")
def test_worker_failure_hints_real_runs(cluster, tmp_path):
    import ray.train as train

    def skips_a_report():
        for step in range(2 if train.get_context().get_world_rank() == 0 else 1):
            train.report({"step": step})

    def async_from_temporary_directory():
        with tempfile.TemporaryDirectory() as folder:
            with open(os.path.join(folder, "state.txt"), "w") as f:
                f.write("1")
            train.report({"step": 0}, checkpoint=train.Checkpoint.from_directory(folder),
                         checkpoint_upload_mode=train.CheckpointUploadMode.ASYNC)
        import time

        time.sleep(2)
        train.report({"step": 1})

    def validates_without_config():
        folder = tempfile.mkdtemp()
        train.report({"step": 0}, checkpoint=train.Checkpoint.from_directory(folder), validation=True)

    cases = [(skips_a_report, 2, {"RAY_TRAIN_COLLECTIVE_TIMEOUT_S": "3"}, "skipped_report"),
             (async_from_temporary_directory, 1, {}, "checkpoint_dir_deleted"),
             (validates_without_config, 1, {}, "validation_without_config")]
    for loop, workers, env, key in cases:
        exc = _bounded_fit(loop, tmp_path / key, workers, env)
        assert type(exc).__name__ == "WorkerGroupError", (key, exc)
        assert _keys(exc) == [key], (key, exc)


# --- the learner's view in a notebook, and plain Python ------------------------------------------

@pytest.mark.slow  # starts a kernel (about 6 s)
def test_notebook_keeps_traceback_and_prints_hint_on_stdout(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell('import raylab\nlab = raylab.setup("hints_probe", start_ray=False)'),
        nbformat.v4.new_code_cell("import ray.train as train\n"
                                  "train.ScalingConfig(num_workers=2, trainer_resources={'CPU': 1})"),
        nbformat.v4.new_code_cell("1 / 0"),
        nbformat.v4.new_code_cell("def broken(:\n    pass"),
    ]
    env_backup = dict(os.environ)
    os.environ["RAYLAB_SCRATCH"] = str(tmp_path / "scratch")
    os.environ.pop("NBGRADER_EXECUTION", None)
    try:
        NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True,
                       resources={"metadata": {"path": str(tmp_path)}}).execute()
    finally:
        os.environ.clear()
        os.environ.update(env_backup)
    failing = nb.cells[1].outputs
    errors = [o for o in failing if o.output_type == "error"]
    assert len(errors) == 1 and errors[0].ename == "DeprecationWarning"
    assert any("ScalingConfig" in line for line in errors[0].traceback), "Ray's traceback is gone"
    stdout = "".join(o.text for o in failing if o.output_type == "stream" and o.name == "stdout")
    stderr = "".join(o.text for o in failing if o.output_type == "stream" and o.name == "stderr")
    assert "[raylab hint]" in stdout and "lab 02" in stdout
    assert "[raylab hint]" not in stderr
    assert failing.index(errors[0]) < max(i for i, o in enumerate(failing) if o.output_type == "stream")
    unrelated = nb.cells[2].outputs
    assert [o.ename for o in unrelated if o.output_type == "error"] == ["ZeroDivisionError"]
    assert not any("[raylab hint]" in o.get("text", "") for o in unrelated)
    syntax = [o for o in nb.cells[3].outputs if o.output_type == "error"]
    assert [o.ename for o in syntax] == ["SyntaxError"]
    assert any("broken" in line for line in syntax[0].traceback)


def test_plain_python_excepthook_keeps_traceback(tmp_path):
    code = ("import raylab.hints as h; h.install()\n"
            "from ray.tune.integration.ray_train import TuneReportCallback\n"
            "TuneReportCallback()\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert proc.returncode == 1
    assert "Traceback" in proc.stderr and "TuneReportCallback must be used in a Tune session" in proc.stderr
    assert "[raylab hint]" in proc.stdout and "lab 07" in proc.stdout


def test_workshop_guide_lists_every_hint():
    from grader.grading import course

    guide = (course.ROOT / "docs" / "workshop.md").read_text()
    missing = [r.hint.key for r in hint_rules.RULES if f"`{r.hint.key}`" not in guide]
    assert not missing, f"docs/workshop.md troubleshooting table lacks {missing}"


def test_lab_titles_come_from_the_lab_folders():
    from grader.authoring import lab_status

    for lab in lab_status.finished_labs():  # a lab in progress has no learner folder yet
        assert hint_rules.lab_title(lab[:2]) == f"lab {lab[:2]} ({lab})"
    assert hint_rules.lab_title("77") == "lab 77"


def test_install_then_uninstall_restores_the_previous_excepthook():
    import sys

    def mine(*exc_info):
        return None

    saved = sys.excepthook
    sys.excepthook = mine
    try:
        assert hints.install() == "excepthook" and sys.excepthook is not mine
        assert hints.install() == "excepthook"  # idempotent: still chains to mine, not to itself
        hints.uninstall()
        assert sys.excepthook is mine
    finally:
        sys.excepthook = saved
