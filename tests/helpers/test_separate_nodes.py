"""raylab.checks.separate_nodes: a real 2-worker Train run whose ranks are numbered as on two nodes."""
import sys

import pytest
from ray import cloudpickle

from raylab.checks import separate_nodes
from raylab.child_process import run_in_child

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # Ray's workers cannot import tests/


def _ranks(config):
    import os

    import ray.train

    context = ray.train.get_context()
    ray.train.report({"world": context.get_world_rank(), "local": context.get_local_rank(),
                      "local_world": context.get_local_world_size(), "node": context.get_node_rank(),
                      "LOCAL_RANK": os.environ.get("LOCAL_RANK")})


def _fit_and_read_every_rank(storage):
    import json
    import os

    import ray.train
    from ray.train.torch import TorchTrainer

    log = os.path.join(storage, "ranks.jsonl")

    class EveryRank(ray.train.UserCallback):
        def after_report(self, run_context, metrics, checkpoint):
            with open(log, "a") as f:
                f.write(json.dumps(metrics) + "\n")

    TorchTrainer(_ranks, scaling_config=ray.train.ScalingConfig(num_workers=2),
                 run_config=ray.train.RunConfig(name="ranks", storage_path=storage, callbacks=[EveryRank()])).fit()
    with open(log) as f:
        return sorted(json.loads(f.readline()), key=lambda m: m["world"])


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_every_worker_gets_the_ranks_of_a_node_of_its_own_only_in_a_job_that_asks(tmp_path):
    import raylab

    raylab.start_cluster()
    try:
        apart = run_in_child(lambda: _fit_and_read_every_rank(str(tmp_path / "apart")), timeout_s=150,
                             env=separate_nodes.job_config_env())
        assert apart.value is not None, (apart.error, apart.output[-3000:])
        together = _fit_and_read_every_rank(str(tmp_path / "together"))
    finally:
        raylab.stop_cluster()
    assert apart.value == [{"world": 0, "local": 0, "local_world": 1, "node": 0, "LOCAL_RANK": "0"},
                           {"world": 1, "local": 0, "local_world": 1, "node": 1, "LOCAL_RANK": "0"}]
    assert together == [{"world": 0, "local": 0, "local_world": 2, "node": 0, "LOCAL_RANK": "0"},
                        {"world": 1, "local": 1, "local_world": 2, "node": 0, "LOCAL_RANK": "1"}]


def test_install_patches_the_rank_assignment_when_ray_train_imports_it():
    import subprocess

    code = ("from raylab.checks import separate_nodes; separate_nodes.install()\n"
            "from ray.train.v2._internal.execution.worker_group.worker_group import WorkerGroup\n"
            "print(WorkerGroup._assign_worker_ranks.__name__)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[-1] == "assign_as_if_apart"
