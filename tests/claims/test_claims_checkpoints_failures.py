"""Claims C14-C26 (labs 03 and 04) checked against the installed Ray 2.58.0.

What this module proves with real runs on one local 2-CPU cluster (no mocks): a checkpoint is a
reference to files you wrote (C14); a retried worker resumes exactly from what it saved and
loaded through ``train.get_checkpoint()`` (C15), and only from that: work after the last
checkpoint is redone, and the same checkpoint restored incompletely continues a different run
(C26); ``train.report`` is a barrier that a skipped call turns into a stall (C16, C18); the
rank-0 checkpoint pattern, rank-0-only metrics, sync/async upload with validation and colliding
shard names, all from the same 2-worker run (C17, C19-C21); the FailureConfig defaults and the
controller retries ``max_failures=0`` leaves on (C23, C24). C22 and C25 are tested in
test_claims_ops.py.

Nothing here can hang unbounded: every run in this process has a gloo time-out, a report-barrier
time-out and a start time-out with finite controller retries; the run with the skipped report
runs in a child process with an 8 s barrier time-out and a hard time limit.
"""
import dataclasses
import json
import os
import sys

import pytest
from ray import cloudpickle as _cloudpickle

from raylab import child_process, ckpt

pytestmark = pytest.mark.slow
# Covers the module fixture's cluster start and Train run too, whichever test comes first.
RUN_TIMEOUT = pytest.mark.timeout(300)

# Ray's workers cannot import this test module by name: ship its functions by value.
_cloudpickle.register_pickle_by_value(sys.modules[__name__])


def _trainer(fn, storage, *, name="run", workers=1, config=None, failure=None, callbacks=None,
             validation_config=None):
    import ray.train
    from ray.train.torch import TorchConfig, TorchTrainer

    return TorchTrainer(
        fn, train_loop_config=config or {}, torch_config=TorchConfig(timeout_s=60),
        scaling_config=ray.train.ScalingConfig(num_workers=workers),
        validation_config=validation_config,
        run_config=ray.train.RunConfig(
            name=name, storage_path=str(storage), callbacks=callbacks,
            failure_config=failure or ray.train.FailureConfig(controller_failure_limit=0)))


# --------------------------------------------------------------------------- C14

def test_c14_from_directory_is_only_a_reference_to_files(tmp_path):
    from ray.train import Checkpoint

    (tmp_path / "model.pt").write_text("weights v1")
    c = Checkpoint.from_directory(str(tmp_path))
    assert set(vars(c)) == {"path", "filesystem", "_uuid"}  # a path, nothing captured
    (tmp_path / "model.pt").write_text("weights v2")  # later writes show through ...
    with c.as_directory() as d:
        assert sorted(os.listdir(d)) == ["model.pt"]  # ... and only what you wrote is in it
        assert open(os.path.join(d, "model.pt")).read() == "weights v2"


# --------------------------------------------------------------------------- C15, C26

def _resuming_fn(config):
    """The lab 03 job: complete state saved every `checkpoint_every` steps, loaded on start.

    A resumed attempt also replays the same checkpoint restored incompletely (weights and step
    counter only) in a shadow job and returns that job's losses.
    """
    import tempfile

    import ray.train
    from ray.train import Checkpoint

    from raylab import ckpt

    job = ckpt.build(config)
    start, saved = 0, None
    found = ray.train.get_checkpoint()
    if found is not None:
        with found.as_directory() as folder:
            saved = ckpt.load_state(folder)
        start = ckpt.restore(job, saved)
    for step in range(start, job.config["steps"]):
        loss = job.train_step(step)
        if (step + 1) % config["checkpoint_every"] == 0:
            with tempfile.TemporaryDirectory() as folder:
                ckpt.save_state(job, step + 1, folder)
                ray.train.report({"step": step, "loss": loss}, checkpoint=Checkpoint.from_directory(folder))
        else:
            ray.train.report({"step": step, "loss": loss})
    if saved is None:
        return None
    shadow = ckpt.build({k: v for k, v in config.items() if k not in ("trace", "fail_at_step")})
    first = ckpt.restore(shadow, saved, parts=("model", "step"))
    return {"resumed_at": first, "losses": [shadow.train_step(s) for s in range(first, config["steps"])]}


@pytest.fixture(scope="module")
def retried_run(train_cluster, tmp_path_factory):
    """One 1-worker run that fails once, at step 4, and is retried."""
    import ray.train

    storage = tmp_path_factory.mktemp("retried")
    cfg = {"seed": 1, "steps": 9, "checkpoint_every": 3, "fail_at_step": 4,
           "fail_marker": str(storage / "failed"), "trace": str(storage / "trace.txt")}
    result = _trainer(_resuming_fn, storage, name="retried", config=cfg,
                      failure=ray.train.FailureConfig(max_failures=1, controller_failure_limit=0)).fit()
    return {"result": result, "attempts": ckpt.read_trace(cfg["trace"]),
            "reference": ckpt.reference_run(cfg)["losses"]}


@RUN_TIMEOUT
def test_c15_get_checkpoint_in_the_worker_resumes_exactly_from_saved_state(retried_run):
    attempts, ref = retried_run["attempts"], retried_run["reference"]
    assert [[s for s, _ in a] for a in attempts] == [[0, 1, 2, 3], [3, 4, 5, 6, 7, 8]]
    # The retry loaded the checkpoint written after step 2 (model, optimizer, scheduler, RNG,
    # data position): its losses are those of the run that never failed.
    assert [loss for _, loss in attempts[0]] == pytest.approx(ref[:4], rel=1e-6)
    assert [loss for _, loss in attempts[1]] == pytest.approx(ref[3:], rel=1e-6)
    assert retried_run["result"].metrics["step"] == 8


@RUN_TIMEOUT
def test_c26_retries_recover_only_what_a_complete_checkpoint_holds(retried_run):
    attempts, ref = retried_run["attempts"], retried_run["reference"]
    # Work no checkpoint holds is lost: step 3 ran after the last checkpoint (written after step
    # 2), so the retry computes it again, with the same result.
    assert attempts[0][-1][0] == attempts[1][0][0] == 3
    assert attempts[0][-1][1] == pytest.approx(attempts[1][0][1], rel=1e-6)
    # The same checkpoint restored without optimizer, scheduler, RNG and data position resumes
    # at the right step but does not continue the run that would have been.
    shadow = retried_run["result"].return_value
    assert shadow["resumed_at"] == 3
    assert shadow["losses"] != pytest.approx(ref[3:], rel=1e-3)


# --------------------------------------------------------------------------- C16-C21

def _report_patterns(config):
    """Lab 03's report patterns on 2 workers; at the end rank 1 skips a report (C18)."""
    import json
    import os
    import shutil
    import tempfile
    import time

    import torch
    import torch.distributed as dist

    import ray.train
    from ray.train import Checkpoint, CheckpointUploadMode

    rank = ray.train.get_context().get_world_rank()
    local_loss = [0.5, 0.1][rank]
    mean = torch.tensor(local_loss)
    dist.all_reduce(mean)  # an aggregate is yours to compute
    out = {}

    # 1. rank 0 writes the checkpoint, rank 1 reports checkpoint=None (SYNC, the default)
    sync_dir = tempfile.mkdtemp()
    ckpt_1 = None
    if rank == 0:
        open(os.path.join(sync_dir, "model.txt"), "w").write("rank 0")
        ckpt_1 = Checkpoint.from_directory(sync_dir)
    ray.train.report({"report": 1, "rank": rank, "loss": local_loss, "loss_mean": float(mean) / 2},
                     checkpoint=ckpt_1)
    out["sync_dir_kept"] = os.path.exists(sync_dir)

    # 2. every rank writes: a shared file name and a rank-specific shard, uploaded ASYNC, validated
    async_dir = tempfile.mkdtemp()
    open(os.path.join(async_dir, "model.txt"), "w").write(f"rank {rank}")
    open(os.path.join(async_dir, f"shard-rank{rank}.txt"), "w").write(f"rank {rank}")
    ray.train.report({"report": 2, "rank": rank, "loss": local_loss},
                     checkpoint=Checkpoint.from_directory(async_dir),
                     checkpoint_upload_mode=CheckpointUploadMode.ASYNC, validation=True)

    # 3, 4. the same slow upload, SYNC then ASYNC: when does report return?
    uploaded = []
    run_dir = ray.train.get_context().get_storage().experiment_fs_path

    def slow_upload(checkpoint, dir_name):  # runs in report's caller (SYNC) or a thread (ASYNC)
        time.sleep(2)
        dest = os.path.join(run_dir, dir_name)
        shutil.copytree(checkpoint.path, dest, dirs_exist_ok=True)
        uploaded.append(time.monotonic())
        return Checkpoint.from_directory(dest)

    returned = []
    for report, mode in ((3, CheckpointUploadMode.SYNC), (4, CheckpointUploadMode.ASYNC)):
        folder = tempfile.mkdtemp()
        open(os.path.join(folder, f"shard-rank{rank}.txt"), "w").write(str(report))
        ray.train.report({"report": report, "rank": rank}, checkpoint=Checkpoint.from_directory(folder),
                         checkpoint_upload_mode=mode, checkpoint_upload_fn=slow_upload)
        returned.append(time.monotonic())
    out["sync_returned_after_upload"] = returned[0] >= uploaded[0]
    # Completion is for you to check: this waits for every report (and validation) so far.
    reported = ray.train.get_all_reported_checkpoints(timeout_s=60)
    out["uploads_done"] = len(uploaded)
    out["async_returned_before_upload"] = len(uploaded) == 2 and returned[1] < uploaded[1]
    out["reported"] = [c.metrics["report"] for c in reported]
    out["async_dir_kept"] = os.path.exists(async_dir)

    # 5. metrics only
    ray.train.report({"report": 5, "rank": rank, "metrics_only": True})
    with open(os.path.join(config["out_dir"], f"rank{rank}.json"), "w") as f:
        json.dump(out, f)

    # 6. rank 1 returns without this report: rank 0 waits for it at the barrier
    if rank == 0:
        ray.train.report({"report": 6, "rank": rank})


def _list_files(checkpoint):
    import os

    with checkpoint.as_directory() as folder:
        return {"validated_files": sorted(os.listdir(folder))}


def _every_rank_log(path):
    """A UserCallback: the controller hands it every rank's metrics of each (barrier) report."""
    import ray.train

    class Log(ray.train.UserCallback):
        def after_report(self, run_context, metrics, checkpoint):
            with open(path, "a") as f:
                f.write(json.dumps({"per_rank": metrics, "checkpoint": checkpoint is not None}) + "\n")

    return Log()


def _run_report_patterns(storage):
    """Runs in a child process (its own driver, on the module's cluster): the run ends stalled."""
    import ray.train

    trainer = _trainer(_report_patterns, storage, name="report", workers=2,
                       config={"out_dir": storage}, callbacks=[_every_rank_log(f"{storage}/every_rank.jsonl")],
                       validation_config=ray.train.ValidationConfig(
                           fn=_list_files, ray_remote_kwargs={"num_cpus": 0}))
    try:
        trainer.fit()
        return {"outcome": "returned"}
    except ray.train.TrainingFailedError as exc:
        return {"outcome": type(exc).__name__,
                "failures": {rank: repr(err) for rank, err in getattr(exc, "worker_failures", {}).items()}}


@pytest.fixture(scope="module")
def report_run(train_cluster, tmp_path_factory):
    """One 2-worker run in a child process with an 8 s report-barrier time-out.

    Reports 1-5 are called by both ranks (C16, C17, C19-C21); report 6 only by rank 0 (C16, C18),
    so the run ends in a WorkerGroupError and its Result is read back from storage.
    """
    from ray.train import Result

    storage = tmp_path_factory.mktemp("report-run")
    env = {"RAY_TRAIN_COLLECTIVE_TIMEOUT_S": "8", "RAY_TRAIN_COLLECTIVE_WARN_INTERVAL_S": "1"}
    run = child_process.run_in_child(lambda: _run_report_patterns(str(storage)), timeout_s=240, env=env,
                            log_to_driver=True)
    assert not run.timed_out and run.error is None, (run.error, run.output[-3000:])
    return {"child": run.value, "output": run.output, "result": Result.from_path(str(storage / "report")),
            "ranks": [json.loads((storage / f"rank{r}.json").read_text()) for r in (0, 1)],
            "seen": [json.loads(line) for line in (storage / "every_rank.jsonl").read_text().splitlines()]}


@RUN_TIMEOUT
def test_c16_equal_report_calls_pair_up_into_one_report_each(report_run):
    # 5 calls on each of 2 ranks: 5 reports, each carrying both ranks' metrics of the same call;
    # rank 0's sixth call found no partner.
    assert [[m["report"] for m in r["per_rank"]] for r in report_run["seen"]] == [[n, n] for n in range(1, 6)]


@RUN_TIMEOUT
def test_c16_c18_skipped_report_stalls_rank_0_at_the_barrier(report_run):
    from ray.train.v2._internal import constants

    assert constants.DEFAULT_COLLECTIVE_TIMEOUT_S is None  # by default this stall never ends
    child = report_run["child"]
    assert child["outcome"] == "WorkerGroupError", child
    assert list(child["failures"]) == [0]  # rank 1 had returned; rank 0 waited for it
    assert "BroadcastCollectiveTimeoutError" in child["failures"][0]
    assert "have not joined the collective operation: [1]" in child["failures"][0]
    # While it waited, Ray said so, naming the missing rank.
    assert "has not been called by all 2 workers" in report_run["output"]
    assert "ranks to join the `ray.train.report` call: [1]" in report_run["output"]


@RUN_TIMEOUT
def test_c17_rank0_checkpoint_with_none_elsewhere_is_registered(report_run):
    first, metrics = report_run["result"].best_checkpoints[0]
    assert metrics["report"] == 1 and sorted(os.listdir(first.path)) == ["model.txt"]
    assert report_run["seen"][0]["checkpoint"] is True
    assert [m["rank"] for m in report_run["seen"][0]["per_rank"]] == [0, 1]  # rank 1 reported too


@RUN_TIMEOUT
def test_c19_metrics_are_rank0s_not_averaged(report_run):
    result, seen = report_run["result"], report_run["seen"]
    assert [m["loss"] for m in seen[0]["per_rank"]] == [0.5, 0.1]
    first_metrics = result.best_checkpoints[0][1]
    assert first_metrics["loss"] == 0.5  # rank 0's, not (0.5 + 0.1) / 2
    assert first_metrics["loss_mean"] == pytest.approx(0.3)  # the mean the training code computed
    # Result.metrics follows the latest checkpoint; the metrics-only report 5 is not in it.
    # (Read back with Result.from_path, which builds the Result that fit() returns.)
    assert result.metrics["report"] == 4 and "metrics_only" not in result.metrics


@RUN_TIMEOUT
def test_c20_sync_upload_by_default_async_returns_early_and_validation_merges(report_run):
    import inspect

    import ray.train

    default = inspect.signature(ray.train.report).parameters["checkpoint_upload_mode"].default
    assert default == ray.train.CheckpointUploadMode.SYNC
    for rank in report_run["ranks"]:
        assert rank["sync_returned_after_upload"] and rank["async_returned_before_upload"]
        assert rank["uploads_done"] == 2  # get_all_reported_checkpoints waited for the async one
        assert rank["reported"] == [1, 2, 3, 4]
        # Temporary files: SYNC leaves your folder alone; ASYNC deletes it after the upload.
        assert rank["sync_dir_kept"] is True and rank["async_dir_kept"] is False
    # The validation task ran on the uploaded checkpoint; its result is merged into its metrics.
    validated = dict(report_run["result"].best_checkpoints[1][1])
    assert validated["report"] == 2
    assert validated["validated_files"] == ["model.txt", "shard-rank0.txt", "shard-rank1.txt"]


@RUN_TIMEOUT
def test_c21_colliding_shard_names_are_merged_silently(report_run):
    path = report_run["result"].best_checkpoints[1][0].path
    assert sorted(os.listdir(path)) == ["model.txt", "shard-rank0.txt", "shard-rank1.txt"]
    # Two ranks wrote model.txt; one copy survived, with no error or warning.
    assert open(os.path.join(path, "model.txt")).read() in ("rank 0", "rank 1")
    for rank in (0, 1):  # rank-specific names keep every shard
        assert open(os.path.join(path, f"shard-rank{rank}.txt")).read() == f"rank {rank}"


# --------------------------------------------------------------------------- C23, C24

def test_c23_failure_config_defaults():
    import ray.train

    fields = {f.name: f.default for f in dataclasses.fields(ray.train.FailureConfig)}
    assert fields["max_failures"] == 0
    assert fields["controller_failure_limit"] == -1
    assert fields["max_preemption_failures"] == -1
    for cls in (ray.train.WorkerGroupError, ray.train.ControllerError, ray.train.PreemptionError):
        assert issubclass(cls, ray.train.TrainingFailedError)


@RUN_TIMEOUT
def test_c24_controller_errors_retry_although_max_failures_is_zero(train_cluster, tmp_path, monkeypatch):
    import ray.train
    from ray.util import placement_group_table

    monkeypatch.setenv("RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S", "2")
    before = set(placement_group_table())
    with pytest.raises(ray.train.ControllerError) as info:
        _trainer(lambda config: None, tmp_path, workers=3,  # 3 x 1 CPU on a 2-CPU cluster
                 failure=ray.train.FailureConfig(max_failures=0, controller_failure_limit=1)).fit()
    assert type(info.value.controller_failure).__name__ == "WorkerGroupStartupTimeoutError"
    tries = [g for pg, g in placement_group_table().items() if pg not in before]
    assert len(tries) == 2  # the first attempt plus one controller retry
