"""Third accuracy pass, labs 03 and 05 (issue 29, items 1 and 3), checked on Ray 2.58.0.

* Lab 03's table of API stability: every API it lists is at the level the table gives, read from
  Ray's own annotations (``ray.util.annotations``: ``@PublicAPI`` / ``@DeveloperAPI`` set
  ``_annotated`` and ``_annotated_type`` on the object and append ``**PublicAPI (alpha):**`` or
  ``**PublicAPI (beta):**`` to its docstring; a field marked in its class docstring reads
  ``name: [DeveloperAPI] ...``), and the table lists exactly these APIs, each in one row.
* C22, lab 03: a run started with the ``RunConfig(name, storage_path)`` of an earlier run resumes
  it without being asked, and Ray Train's controller logs (INFO) that a run snapshot was found
  and will be loaded (``checkpoint_manager.py:465-495``): not silently.
* C25, lab 05: Ray Train waits out a preemption until the deadline the node announced, and only
  when it announced none for ``DEFAULT_PREEMPTION_DEADLINE_S`` = 120 s after noticing it
  (``controller.py:732-746``); a longer announced notice makes the retry budget's worst case longer.
"""
import re
import sys
import time

import nbformat
import pytest
from ray import cloudpickle as _cloudpickle

from grader.grading import course

_cloudpickle.register_pickle_by_value(sys.modules[__name__])


def _objects():
    """Every API lab 03's stability table names, as the table spells it -> the object (or
    (class, field) for a field of a config class)."""
    import ray
    import ray.train
    import ray.tune
    from ray.train.torch import TorchConfig, TorchTrainer, get_device, prepare_data_loader, prepare_model
    from ray.tune.integration.ray_train import TuneReportCallback
    from ray.tune.schedulers import ASHAScheduler
    from ray.util import get_current_placement_group, placement_group_table

    return {
        "TorchTrainer": TorchTrainer, "TorchConfig": TorchConfig, "ScalingConfig": ray.train.ScalingConfig,
        "RunConfig": ray.train.RunConfig, "FailureConfig": ray.train.FailureConfig,
        "CheckpointConfig": ray.train.CheckpointConfig, "ray.train.report": ray.train.report,
        "get_checkpoint": ray.train.get_checkpoint, "get_context": ray.train.get_context, "Result": ray.train.Result,
        "ray.train.torch.prepare_data_loader": prepare_data_loader, "get_device": get_device,
        "ray.tune.RunConfig": ray.tune.RunConfig, "ASHAScheduler": ASHAScheduler,
        "ray.util.get_current_placement_group": get_current_placement_group, "ray.remote": ray.remote,
        "ray.get": ray.get,
        "Checkpoint": ray.train.Checkpoint, "ray.tune.Tuner": ray.tune.Tuner, "TuneConfig": ray.tune.TuneConfig,
        "tune.with_resources": ray.tune.with_resources, "ResultGrid": ray.tune.ResultGrid,
        "CheckpointUploadMode": ray.train.CheckpointUploadMode, "ValidationConfig": ray.train.ValidationConfig,
        "get_all_reported_checkpoints": ray.train.get_all_reported_checkpoints,
        "TrainingFailedError": ray.train.TrainingFailedError, "WorkerGroupError": ray.train.WorkerGroupError,
        "ControllerError": ray.train.ControllerError, "PreemptionError": ray.train.PreemptionError,
        "ray.train.UserCallback": ray.train.UserCallback, "callbacks": (ray.train.RunConfig, "callbacks"),
        "controller_failure_limit": (ray.train.FailureConfig, "controller_failure_limit"),
        "TuneReportCallback": TuneReportCallback, "ray.util.placement_group_table": placement_group_table,
        "ray.cluster_resources": ray.cluster_resources, "ray.train.torch.prepare_model": prepare_model,
    }


def stability(obj) -> str:
    """Ray's stability mark of an API: stable, beta, alpha, DeveloperAPI, or not marked."""
    if isinstance(obj, tuple):  # a field: its class docstring says "name: [DeveloperAPI] ..."
        cls, field = obj
        return "DeveloperAPI" if re.search(rf"^\s*{field}: \[DeveloperAPI\]", cls.__doc__ or "", re.M) \
            else stability(cls)
    if getattr(obj, "_annotated", None) != getattr(obj, "__name__", None):
        return "not marked"
    if obj._annotated_type.name == "DEVELOPER_API":
        return "DeveloperAPI"
    level = re.search(r"\*\*PublicAPI \((alpha|beta)\):\*\*", obj.__doc__ or "")
    return level.group(1) if level else "stable"


def _lab03_table() -> dict[str, str]:
    """Lab 03's stability table: API as spelled in its cell -> the row's level."""
    nb = nbformat.read(course.solution_path("03_checkpoints_and_report"), as_version=4)
    rows = {}
    for cell in nb.cells:
        for line in cell.source.splitlines():
            m = re.match(r"\| (stable|beta|alpha|DeveloperAPI|not marked) \| (.*) \|$", line)
            if m:
                for name in re.findall(r"`([^`]+)`", m.group(2)):
                    rows.setdefault(name.split("(")[0], []).append(m.group(1))
    return rows


# Names the table spells as part of a phrase (the field's class, a second API of the same module).
_PHRASE_ONLY = {"RunConfig", "FailureConfig", "prepare_data_loader", "get_device", "ray.train.torch"}


def test_lab03_stability_table_matches_ray_annotations():
    table = _lab03_table()
    objects = _objects()
    assert table, "lab 03 has no stability table"
    listed = {name: levels for name, levels in table.items()}
    for name, obj in objects.items():
        assert name in listed, f"{name} is not in lab 03's stability table"
        assert stability(obj) in listed[name], (name, stability(obj), listed[name])
    # and the table names nothing this test does not check
    assert set(listed) <= set(objects) | _PHRASE_ONLY, sorted(set(listed) - set(objects))


@pytest.mark.parametrize("name, level", [
    ("TuneReportCallback", "DeveloperAPI"), ("callbacks", "DeveloperAPI"),
    ("controller_failure_limit", "DeveloperAPI"), ("ray.util.placement_group_table", "DeveloperAPI"),
    ("TrainingFailedError", "alpha"), ("WorkerGroupError", "alpha"), ("ControllerError", "alpha"),
    ("PreemptionError", "alpha"), ("TorchTrainer", "stable"), ("Checkpoint", "beta"),
])
def test_issue_29_named_apis_are_at_the_stated_level(name, level):
    assert stability(_objects()[name]) == level


def test_c25_preemption_wait_is_the_announced_deadline_else_120_s():
    from ray.train.v2._internal.constants import DEFAULT_PREEMPTION_DEADLINE_S
    from ray.train.v2._internal.execution.controller.controller import TrainController
    from ray.train.v2.api.preemption import PreemptionInfo

    import raylab.retry_budget as rb
    from ray.train import FailureConfig

    assert DEFAULT_PREEMPTION_DEADLINE_S == 120.0
    noticed = time.time() - 300  # noticed 5 minutes ago
    done = TrainController._is_preemption_deadline_exceeded
    assert done(PreemptionInfo(deadline_ms=None, preempted_node_to_ranks={"n": [0]}), noticed)
    # a node that announced it goes 15 minutes after the notice is still waited for after 5
    assert not done(PreemptionInfo(deadline_ms=(noticed + 900) * 1000, preempted_node_to_ranks={"n": [0]}), noticed)
    assert done(PreemptionInfo(deadline_ms=(noticed + 200) * 1000, preempted_node_to_ranks={"n": [0]}), noticed)
    # lab 05's numbers: the budgeted plan fits the hour with the fallback, not with a 15-minute notice
    fc = FailureConfig(controller_failure_limit=1, max_failures=0, max_preemption_failures=1)
    times = {"start_timeout_s": 60, "attempt_s": 1000}
    assert rb.worst_case_s(fc, **times) == 2900
    assert rb.worst_case_s(fc, preemption_wait_s=900, **times) == 3980


def _one_checkpoint(config):
    import os
    import tempfile

    import ray.train

    folder = tempfile.mkdtemp()
    with open(os.path.join(folder, "x.txt"), "w") as f:
        f.write("x")
    ray.train.report({"found": ray.train.get_checkpoint() is not None},
                     checkpoint=ray.train.Checkpoint.from_directory(folder))


@pytest.mark.slow
@pytest.mark.timeout(420)
def test_c22_reused_run_name_resumes_and_logs_the_snapshot(train_cluster, tmp_path):
    import ray.train
    from ray.train.torch import TorchTrainer

    import raylab.run_view

    name = f"snapshot-{tmp_path.name}"
    found = []
    for _ in range(2):
        result = TorchTrainer(_one_checkpoint, scaling_config=ray.train.ScalingConfig(num_workers=1),
                              run_config=ray.train.RunConfig(name=name, storage_path=str(tmp_path))).fit()
        found.append(result.metrics["found"])
    assert found == [False, True]  # the second run got the first run's checkpoint without asking
    logged = [line for line in raylab.run_view.controller_log(name, lines_per_message=2) if "snapshot" in line]
    assert len(logged) == 1, logged
    assert "A run snapshot was found in storage folder" in logged[0] and "will be loaded" in logged[0], logged
