"""Fixes of issue 12 in labs 02, 06 and 07 (lab numbers of the renumbered course), checked against the installed Ray 2.58.0 (no mocks).

- C09 (lab 02): an elastic run that loses a worker ends with ``WorkerGroupError`` under the default
  ``FailureConfig`` (``max_failures=0``); with ``max_failures=1`` Ray Train starts a new group and
  the run finishes. Source (paths under ``ray/train/v2/_internal/execution/``): the controller
  hands every worker-group error to the failure policy whatever the scaling mode
  (``controller/controller.py:679``, ``_step``, RunningState), which counts it against
  ``max_failures`` (``failure_handling/default.py:119-127``); only after a RETRY does the elastic
  policy size the next group from the cluster's nodes, between min and max workers
  (``scaling_policy/elastic.py:161-192``). On one machine the lost worker's CPU comes back at once,
  so the new group has 2 workers again; a smaller group needs a lost node, which one machine
  cannot show.
  Seen once while writing the demo (not asserted here): a worker that exits in the instant its
  training function is launched, before the group counts as running, surfaces as a non-retryable
  ``ControllerError`` wrapping ``ActorDiedError`` (the ``ray.get`` of ``run_train_fn`` in
  ``worker_group/worker_group.py:388-393`` is outside the ``RayActorError`` conversion), and the
  next run on that cluster could not place its workers. The lab's worker therefore dies after its
  first report.
- C36 (lab 07): a Train run lives in ``<storage_path>/<name>`` (``ray/train/v2/api/config.py:532``
  passes ``experiment_dir_name=self.name``; ``.../execution/storage.py:513-520``,
  ``experiment_fs_path``), so only the pair must be unique: the same name under another storage
  path starts fresh, the same pair resumes.
- C37 (lab 07): ``TuneReportCallback`` (``ray/tune/integration/ray_train.py:13``) and
  ``ray.train.UserCallback`` (``ray/train/v2/api/callback.py:15``) are ``@DeveloperAPI`` in 2.58.0,
  and ``ray.train.RunConfig``'s docstring marks ``callbacks`` the same (``config.py:434``).
- Lab 06 ``build_tuner``: the test cell judges the concurrency limit by the trials' measured
  overlap, so every spelling Tune honours passes and a limit Tune ignores fails.
"""
import os
import sys
from pathlib import Path

import pytest
import ray.cloudpickle

ROOT = Path(__file__).resolve().parents[2]

# Ray workers cannot import this test module by name: ship its functions by value.
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


def test_c37_tune_report_callback_is_developer_api():
    from ray.train import UserCallback
    from ray.tune.integration.ray_train import TuneReportCallback
    from ray.util.annotations import AnnotationType

    for api in (TuneReportCallback, UserCallback):
        assert api._annotated == api.__name__  # the mark belongs to this class, not a parent
        assert api._annotated_type == AnnotationType.DEVELOPER_API
        assert "**DeveloperAPI:**" in api.__doc__
    import ray.train

    assert "callbacks: [DeveloperAPI]" in ray.train.RunConfig.__doc__


def _loses_rank_1_once(config):
    import ray.train

    ctx = ray.train.get_context()
    ray.train.report({"step": 0})
    marker = os.path.join(config["marker_folder"], "rank-1-was-lost")
    if ctx.get_world_rank() == 1 and not os.path.exists(marker):
        open(marker, "w").close()
        os._exit(1)
    ray.train.report({"step": 1})
    return ctx.get_world_size()


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_c09_elastic_run_ends_on_a_lost_worker_unless_retries_are_allowed(train_cluster, tmp_path):
    import ray.train
    from ray.train import FailureConfig, RunConfig, ScalingConfig
    from ray.train.torch import TorchTrainer

    def run(label, failure_config):
        marker_folder = tmp_path / f"marker-{label}"
        marker_folder.mkdir()
        trainer = TorchTrainer(
            _loses_rank_1_once,
            train_loop_config={"marker_folder": str(marker_folder)},
            scaling_config=ScalingConfig(num_workers=(1, 2)),
            run_config=RunConfig(name=label, storage_path=str(tmp_path / "runs"),
                                 failure_config=failure_config),
        )
        return trainer, (marker_folder / "rank-1-was-lost").exists

    assert FailureConfig().max_failures == 0
    trainer, was_lost = run("defaults", FailureConfig())
    with pytest.raises(ray.train.WorkerGroupError) as info:
        trainer.fit()
    assert was_lost()
    assert list(info.value.worker_failures) == [1], info.value.worker_failures  # only rank 1 failed

    trainer, was_lost = run("one-retry", FailureConfig(max_failures=1))
    result = trainer.fit()
    assert was_lost() and result.error is None
    assert result.return_value == 2  # the new group was sized from the cluster: both CPUs are back



# Two one-CPU nodes simulated on this machine (ray.cluster_utils.Cluster, in a child process so the
# module's cluster is not touched); the driver removes the node of one worker while the 2-worker
# group runs.
_LOST_NODE_SNIPPET = r'''import json, os, tempfile, threading, time
import ray, ray.train
from ray.cluster_utils import Cluster
from ray.train import FailureConfig, RunConfig, ScalingConfig
from ray.train.torch import TorchTrainer

STORE = 80 * 1024 * 1024
cluster = Cluster(initialize_head=True, head_node_args=dict(num_cpus=1, object_store_memory=STORE, include_dashboard=False))
worker_node = cluster.add_node(num_cpus=1, object_store_memory=STORE)
ray.init(address=cluster.address, logging_level="ERROR")
cluster.wait_for_nodes()
folder = tempfile.mkdtemp()

def train_fn(config):
    import os, time, ray, ray.train
    ctx = ray.train.get_context()
    node = ray.get_runtime_context().get_node_id()
    open(os.path.join(config["folder"], f"{ctx.get_world_size()}-{ctx.get_world_rank()}-{node}"), "w").close()
    ray.train.report({"world": ctx.get_world_size()})
    if ctx.get_world_size() == 2:
        time.sleep(300)  # the first group waits here until its second node goes away
    return ctx.get_world_size()

out = {}
def fit():
    try:
        r = TorchTrainer(train_fn, train_loop_config={"folder": folder},
                         scaling_config=ScalingConfig(num_workers=(1, 2)),
                         run_config=RunConfig(name="shrink", storage_path=tempfile.mkdtemp(),
                                              failure_config=FailureConfig(max_failures=1))).fit()
        out["world"] = r.return_value
    except Exception as e:
        out["error"] = repr(e)[:300]
t = threading.Thread(target=fit); t.start()
deadline = time.monotonic() + 300
while time.monotonic() < deadline and len([f for f in os.listdir(folder) if f.startswith("2-")]) < 2:
    time.sleep(0.2)
print("started:", sorted(os.listdir(folder)), flush=True)
cluster.remove_node(worker_node)
print("removed worker node", worker_node.node_id, flush=True)
t.join(timeout=180)
print("SHRINK_JSON", json.dumps({"out": out, "files": sorted(os.listdir(folder)), "worker_node": worker_node.node_id}), flush=True)
ray.shutdown(); cluster.shutdown()
'''


@pytest.mark.slow
@pytest.mark.timeout(700)
def test_c09_elastic_retry_sizes_the_new_group_from_the_nodes_left():
    import json

    from raylab.child_process import run_snippet

    # The start time-out bounds the wait for a group that the lost node can no longer host
    # (this test took 81 s with 60 s, 49 s with 20 s); a group that can start does so in a few
    # seconds, and a start that runs out is a controller failure, retried (limit -1 by default).
    res = run_snippet(_LOST_NODE_SNIPPET, timeout_s=600,
                      env={"RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S": "20"})
    lines = [line for line in res.stdout.splitlines() if line.startswith("SHRINK_JSON ")]
    assert lines, f"no report (rc={res.returncode}, timed out={res.timed_out}):\n{res.tail(30, 'stderr')}"
    report = json.loads(lines[0].split(" ", 1)[1])
    first_group = [f for f in report["files"] if f.startswith("2-")]
    assert len(first_group) == 2, report  # the 2-worker group ran before the node went away
    assert report["out"] == {"world": 1}, report  # the retry started 1 worker, on the node left
    assert [f for f in report["files"] if f.startswith("1-")], report


def _count_starts(config):
    import tempfile

    import ray.train

    resumed = ray.train.get_checkpoint() is not None
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "step.txt").write_text("0")
        ray.train.report({"resumed": resumed}, checkpoint=ray.train.Checkpoint.from_directory(folder))


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_c36_only_the_storage_path_and_name_pair_must_be_unique(train_cluster, tmp_path):
    from ray.train import RunConfig, ScalingConfig
    from ray.train.torch import TorchTrainer

    def fit(storage, name):
        return TorchTrainer(_count_starts, scaling_config=ScalingConfig(num_workers=1),
                            run_config=RunConfig(name=name, storage_path=str(storage))).fit()

    first = fit(tmp_path / "a", "same-name")
    assert first.metrics["resumed"] is False
    assert Path(first.path) == tmp_path / "a" / "same-name"
    other_storage = fit(tmp_path / "b", "same-name")  # same name, other storage_path: a new run
    assert other_storage.metrics["resumed"] is False
    assert Path(other_storage.path) == tmp_path / "b" / "same-name"
    same_pair = fit(tmp_path / "a", "same-name")  # the same pair: Ray Train resumes the first run
    assert same_pair.metrics["resumed"] is True


# ------------------------------------------------------------------------------------------
# Lab 06, exercise 1: the test cell against answers that differ from the solution
# ------------------------------------------------------------------------------------------

LAB05 = "06_tune_searchers_and_schedulers"

BUILD_TUNER_ANSWERS = {
    # right: the limit set on the search algorithm instead of TuneConfig
    "searcher_max_concurrent": ("right", '''
from ray import tune
from ray.tune.search import BasicVariantGenerator

def build_tuner(objective, storage_path):
    return tune.Tuner(
        tune.with_resources(objective, {"cpu": 0.5}),
        param_space={"lr": tune.grid_search([0.01, 0.1]), "width": tune.grid_search([16, 64])},
        tune_config=tune.TuneConfig(metric="score", mode="max",
                                    search_alg=BasicVariantGenerator(max_concurrent=2)),
        run_config=tune.RunConfig(name="budgeted_search", storage_path=storage_path, verbose=0),
    )
'''),
    # right: "at most 2" met by 1; resources as a placement group factory; storage as a Path
    "one_at_a_time_pgf_path": ("right", '''
from pathlib import Path
from ray import tune

def build_tuner(objective, storage_path):
    return tune.Tuner(
        tune.with_resources(objective, tune.PlacementGroupFactory([{"CPU": 0.5}])),
        param_space={"width": tune.grid_search([16, 64]), "lr": tune.grid_search([0.01, 0.1])},
        tune_config=tune.TuneConfig(mode="max", metric="score", max_concurrent_trials=1),
        run_config=tune.RunConfig(storage_path=Path(storage_path), name="budgeted_search", verbose=0),
    )
'''),
    # wrong: Tune 2.58.0 ignores max_concurrent_trials next to an explicit BasicVariantGenerator
    "limit_ignored_beside_explicit_searcher": ("wrong", '''
from ray import tune
from ray.tune.search import BasicVariantGenerator

def build_tuner(objective, storage_path):
    return tune.Tuner(
        tune.with_resources(objective, {"cpu": 0.5}),
        param_space={"lr": tune.grid_search([0.01, 0.1]), "width": tune.grid_search([16, 64])},
        tune_config=tune.TuneConfig(metric="score", mode="max", max_concurrent_trials=2,
                                    search_alg=BasicVariantGenerator()),
        run_config=tune.RunConfig(name="budgeted_search", storage_path=storage_path, verbose=0),
    )
'''),
}


def _cell_source(lab: str, grade_id: str) -> str:
    import nbformat

    nb = nbformat.read(ROOT / "solutions" / lab / f"{lab}.ipynb", as_version=4)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == grade_id:
            return cell.source
    raise KeyError(grade_id)


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("answer", sorted(BUILD_TUNER_ANSWERS))
def test_lab06_build_tuner_tests_judge_behaviour(train_cluster, tmp_path, monkeypatch, answer):
    from raylab.checks.common import CheckFailed
    from raylab.cluster import Lab

    monkeypatch.setenv("RAYLAB_SCRATCH", str(tmp_path))
    verdict, source = BUILD_TUNER_ANSWERS[answer]
    namespace = {"__name__": "__main__", "lab": Lab(name=LAB05, storage=tmp_path)}
    exec(compile(source, f"<{answer}>", "exec"), namespace)
    test_cell = compile(_cell_source(LAB05, "build_tuner_tests"), "<build_tuner_tests>", "exec")
    if verdict == "right":
        exec(test_cell, namespace)
    else:
        with pytest.raises(CheckFailed, match="trials ran at the same time"):
            exec(test_cell, namespace)
