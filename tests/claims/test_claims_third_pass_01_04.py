"""Third accuracy pass (issue 29, item 3) for labs 01 and 04, checked on Ray 2.58.0.

* Lab 01: the checkpoint folder a worker passes to ``ray.train.report`` is copied to storage by
  that worker, inside ``report`` and before it returns (SYNC upload, the default):
  ``ray/train/v2/_internal/execution/context.py`` ``TrainContext.report`` ->
  ``_upload_checkpoint`` -> ``StorageContext.persist_current_checkpoint``
  (``_internal/execution/storage.py``). The controller only receives the training result (metrics
  and the persisted checkpoint's location). Shown on a real 2-worker run: the copy function is
  wrapped inside the worker process only, it runs there (the worker's pid, the rank that passed a
  checkpoint), and the folder is in storage when ``report`` returns.
* Lab 04: Train V2 picks the backend of ``TorchConfig(backend=None)`` in ``TorchTrainer.__init__``
  (``ray/train/v2/torch/torch_trainer.py``) from ``scaling_config.use_gpu``: ``"nccl"`` or
  ``"gloo"``, before anything runs; the ``backend is None`` branch of
  ``ray/train/torch/config.py``'s ``_TorchBackend.on_start`` is never reached by a V2 trainer,
  because its backend is already set.
"""
import inspect
import os
import sys
import tempfile

import pytest
from ray import cloudpickle as _cloudpickle

_cloudpickle.register_pickle_by_value(sys.modules[__name__])


def _upload_probe(config):
    import os
    import tempfile

    import ray.train
    from ray.train.v2._internal.execution import storage

    calls = []
    original = storage.StorageContext.persist_current_checkpoint

    def recording(self, checkpoint, checkpoint_dir_name):
        persisted = original(self, checkpoint, checkpoint_dir_name)
        calls.append({"pid": os.getpid(), "to": persisted.path})
        return persisted

    storage.StorageContext.persist_current_checkpoint = recording  # in this worker process only
    rank = ray.train.get_context().get_world_rank()
    with tempfile.TemporaryDirectory() as folder:
        checkpoint = None
        if rank == 0:
            with open(os.path.join(folder, "model.pt"), "w") as f:
                f.write("weights")
            checkpoint = ray.train.Checkpoint.from_directory(folder)
        ray.train.report({"rank": rank}, checkpoint=checkpoint)
    in_storage = [os.path.isfile(os.path.join(c["to"], "model.pt")) for c in calls]  # after report returned
    from raylab.ddp import gather

    return gather({"rank": rank, "pid": os.getpid(), "uploads": calls, "in_storage": in_storage})


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_each_worker_uploads_its_own_checkpoint_inside_report(train_cluster):
    import ray.train
    from ray.train.torch import TorchTrainer

    storage = tempfile.mkdtemp(prefix="third-pass-01-")
    result = TorchTrainer(
        _upload_probe, scaling_config=ray.train.ScalingConfig(num_workers=2),
        run_config=ray.train.RunConfig(name="upload", storage_path=storage,
                                       failure_config=ray.train.FailureConfig(max_failures=0)),
    ).fit()
    ranks = sorted(result.return_value, key=lambda r: r["rank"])
    rank0, rank1 = ranks
    assert rank1["uploads"] == []  # a rank that passes no checkpoint copies nothing
    assert len(rank0["uploads"]) == 1 and rank0["uploads"][0]["pid"] == rank0["pid"] != os.getpid()
    assert rank0["in_storage"] == [True]  # already in storage when report returned
    assert os.path.dirname(rank0["uploads"][0]["to"]) == os.path.join(storage, "upload")
    assert result.checkpoint.path == rank0["uploads"][0]["to"]


def test_v2_torch_trainer_sets_the_backend_from_use_gpu_when_constructed():
    import ray.train
    from ray.train.torch import TorchConfig, TorchTrainer

    assert TorchTrainer.__module__ == "ray.train.v2.torch.torch_trainer"
    source = inspect.getsource(TorchTrainer.__init__)
    assert "is_gpu_training = scaling_config and scaling_config.use_gpu" in source
    assert 'torch_config.backend = "nccl" if is_gpu_training else "gloo"' in source
    for use_gpu, backend in ((False, "gloo"), (True, "nccl")):
        trainer = TorchTrainer(lambda config: None,
                               scaling_config=ray.train.ScalingConfig(num_workers=2, use_gpu=use_gpu))
        assert trainer.backend_config.backend == backend
        named = TorchTrainer(lambda config: None, torch_config=TorchConfig(backend="gloo"),
                             scaling_config=ray.train.ScalingConfig(num_workers=2, use_gpu=use_gpu))
        assert named.backend_config.backend == "gloo"  # a named backend is kept
