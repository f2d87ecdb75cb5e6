"""C22 on two (simulated) nodes: in Ray Train V2, node-local storage fails fast.

The controller writes a marker file, ``.validate_storage_marker``, into ``storage_path/name``
when it sets up the run's storage (``ray/train/v2/_internal/execution/storage.py``, lines
411-413 and 424-434); every worker checks that it can see that marker before it uploads a
checkpoint (``persist_current_checkpoint``, lines 490-495) and otherwise raises
``RuntimeError: Unable to set up cluster storage ...`` (lines 436-450). A worker on another node
than the controller, with ``storage_path`` on a node-local disk, therefore fails at its first
checkpoint upload; metrics-only reports before it go through.

One machine has one disk, so the nodes of a ``ray.cluster_utils.Cluster`` share it. To give each
simulated node its own disk, the runs below use a pyarrow filesystem that stores every path under
a folder named after the Ray node the calling process runs on (``NodeLocalDisk``): the head's
processes (driver, Train controller) see one folder, the second node's worker another, as two
machines with ``/tmp`` storage would. Everything else is real Ray: two raylets, a controller on
the head, a worker placed on the second node.
"""
import json
import os
import sys

import pyarrow.fs as pafs
import pytest
from ray import cloudpickle as _cloudpickle

pytestmark = pytest.mark.slow

_cloudpickle.register_pickle_by_value(sys.modules[__name__])


class NodeLocalDisk(pafs.FileSystemHandler):
    """A local filesystem whose contents depend on the Ray node of the calling process."""

    def __init__(self, root: str):
        self.root = root
        self.local = pafs.LocalFileSystem()

    def _base(self) -> str:
        import ray

        node = ray.get_runtime_context().get_node_id()[:12] if ray.is_initialized() else "driver"
        base = os.path.join(self.root, f"node-{node}")
        os.makedirs(base, exist_ok=True)
        return base

    def _p(self, path: str) -> str:
        return os.path.join(self._base(), path.lstrip("/"))

    def _strip(self, info):
        rel = "/" + os.path.relpath(info.path, self._base())
        return pafs.FileInfo(rel, info.type, mtime=info.mtime, size=info.size)

    def __reduce__(self):
        return NodeLocalDisk, (self.root,)

    def get_type_name(self):
        return "node-local"

    def normalize_path(self, path):
        return path

    def equals(self, other):
        return isinstance(other, NodeLocalDisk) and other.root == self.root

    def get_file_info(self, paths):
        return [self._strip(i) for i in self.local.get_file_info([self._p(p) for p in paths])]

    def get_file_info_selector(self, selector):
        sel = pafs.FileSelector(self._p(selector.base_dir), allow_not_found=selector.allow_not_found,
                                recursive=selector.recursive)
        return [self._strip(i) for i in self.local.get_file_info(sel)]

    def create_dir(self, path, recursive):
        self.local.create_dir(self._p(path), recursive=recursive)

    def delete_dir(self, path):
        self.local.delete_dir(self._p(path))

    def delete_dir_contents(self, path, missing_dir_ok=False):
        self.local.delete_dir_contents(self._p(path), missing_dir_ok=missing_dir_ok)

    def delete_root_dir_contents(self):
        self.local.delete_dir_contents(self._base())

    def delete_file(self, path):
        self.local.delete_file(self._p(path))

    def move(self, src, dest):
        self.local.move(self._p(src), self._p(dest))

    def copy_file(self, src, dest):
        self.local.copy_file(self._p(src), self._p(dest))

    def open_input_stream(self, path):
        return self.local.open_input_stream(self._p(path))

    def open_input_file(self, path):
        return self.local.open_input_file(self._p(path))

    def open_output_stream(self, path, metadata):
        return self.local.open_output_stream(self._p(path), metadata=metadata)

    def open_append_stream(self, path, metadata):
        return self.local.open_append_stream(self._p(path), metadata=metadata)


def _report_then_checkpoint(config):
    """A metrics-only report, then a checkpoint, on the one worker; notes where it ran."""
    import tempfile

    import ray
    import ray.train

    node = ray.get_runtime_context().get_node_id()
    ray.train.report({"step": 0})
    with open(config["log"], "a") as f:  # the machine's real disk, for the test to read
        f.write(json.dumps({"node": node, "metrics_only_report": "returned"}) + "\n")
    with tempfile.TemporaryDirectory() as folder:
        with open(os.path.join(folder, "state.txt"), "w") as f:
            f.write("step 1")
        ray.train.report({"step": 1}, checkpoint=ray.train.Checkpoint.from_directory(folder))
    with open(config["log"], "a") as f:
        f.write(json.dumps({"node": node, "checkpoint_report": "returned"}) + "\n")


@pytest.fixture(scope="module")
def two_nodes():
    """A head with 0 CPUs (driver and Train controller) and a second node with 1 CPU (the only
    place a Train worker fits)."""
    import ray
    from ray.cluster_utils import Cluster

    assert not ray.is_initialized()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
    try:
        cluster.add_node(num_cpus=1)
        ray.init(address=cluster.address)
        yield ray.get_runtime_context().get_node_id()
    finally:
        ray.shutdown()
        cluster.shutdown()


def _fit(storage_path, storage_filesystem, log, name):
    import ray.train
    from ray.train.torch import TorchConfig, TorchTrainer

    trainer = TorchTrainer(
        _report_then_checkpoint, train_loop_config={"log": log},
        torch_config=TorchConfig(timeout_s=60),
        scaling_config=ray.train.ScalingConfig(num_workers=1),
        run_config=ray.train.RunConfig(name=name, storage_path=storage_path,
                                       storage_filesystem=storage_filesystem,
                                       failure_config=ray.train.FailureConfig(controller_failure_limit=0)))
    try:
        return trainer.fit(), None
    except ray.train.TrainingFailedError as exc:
        return None, exc


def _log(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


@pytest.mark.timeout(300)
def test_c22_node_local_storage_fails_at_the_first_checkpoint_upload_on_another_node(
        two_nodes, tmp_path, monkeypatch):
    import ray.train

    monkeypatch.setenv("RAY_TRAIN_COLLECTIVE_TIMEOUT_S", "60")
    monkeypatch.setenv("RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S", "60")
    head = two_nodes
    log = str(tmp_path / "log.jsonl")
    disks = tmp_path / "disks"
    result, error = _fit("/ray_results", pafs.PyFileSystem(NodeLocalDisk(str(disks))), log, "local-disk")
    assert result is None and isinstance(error, ray.train.WorkerGroupError), (result, error)
    [failure] = error.worker_failures.values()
    assert "Unable to set up cluster storage" in str(failure)
    seen = _log(log)
    assert seen == [{"node": seen[0]["node"], "metrics_only_report": "returned"}]  # never got past the upload
    assert seen[0]["node"] != head  # the worker ran on the second node
    # The marker is on the head's disk only, where the controller wrote it.
    markers = sorted(p.relative_to(disks).parts[0] for p in disks.rglob(".validate_storage_marker"))
    assert markers == [f"node-{head[:12]}"]


@pytest.mark.timeout(300)
def test_c22_shared_storage_passes_the_same_check(two_nodes, tmp_path, monkeypatch):
    monkeypatch.setenv("RAY_TRAIN_COLLECTIVE_TIMEOUT_S", "60")
    monkeypatch.setenv("RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S", "60")
    log = str(tmp_path / "log.jsonl")
    # The same run with a path both simulated nodes see (one machine's disk: a shared filesystem).
    result, error = _fit(str(tmp_path / "shared"), None, log, "shared")
    assert error is None, error
    assert sorted(os.listdir(result.checkpoint.path)) == ["state.txt"]
    assert [sorted(e) for e in _log(log)] == [["metrics_only_report", "node"], ["checkpoint_report", "node"]]
