"""raylab.run_view: a run's folder, Ray's logs and what a stuck run waits for."""
import pytest

from raylab import run_view

STATUS = """======== Autoscaler status: 2026-12-03 14:54:02 ========
Resources
---------------------------------------------------------------
Total Usage:
 0.0/2.0 CPU

Pending Demands:
 {'CPU': 1.0} * 3 (PACK): 1+ pending placement groups
 {'CPU': 1.0}: 2+ pending tasks/actors
"""


def test_pending_demands_reads_what_waits_and_nothing_else():
    assert run_view.pending_demands(STATUS) == ["{'CPU': 1.0} * 3 (PACK): 1+ pending placement groups",
                                                "{'CPU': 1.0}: 2+ pending tasks/actors"]
    idle = STATUS.split("Pending Demands:")[0] + "Pending Demands:\n (no resource demands)\n"
    assert run_view.pending_demands(idle) == []
    assert run_view.pending_demands("no such section") == []


def test_run_tree_lists_folders_first_with_file_sizes(tmp_path):
    (tmp_path / "checkpoint_000000").mkdir()
    (tmp_path / "checkpoint_000000" / "model.pt").write_bytes(b"x" * 10)
    (tmp_path / "result.json").write_text("{}")
    text = run_view.run_tree(tmp_path).splitlines()
    assert text[0] == f"{tmp_path}/"
    assert text[1:] == ["    checkpoint_000000/", "        model.pt  (10 bytes)", "    result.json  (2 bytes)"]
    for i in range(50):
        (tmp_path / f"f{i:02d}").write_text("")
    assert run_view.run_tree(tmp_path, max_entries=10).splitlines()[-1] == "    ..."


@pytest.mark.slow
def test_a_placement_group_that_cannot_fit_shows_as_a_pending_demand():
    import ray
    from ray.util.placement_group import placement_group, remove_placement_group

    ray.init(num_cpus=2, include_dashboard=False)
    try:
        pg = placement_group([{"CPU": 1}] * 3, strategy="PACK")
        import time

        for _ in range(30):  # the autoscaler's view is refreshed every few seconds
            demands = run_view.pending_demands(run_view.cluster_status())
            if demands:
                break
            time.sleep(1)
        assert any("* 3 (PACK)" in d and "placement group" in d for d in demands), demands
        assert run_view.session_dir().is_dir()
        remove_placement_group(pg)
    finally:
        ray.shutdown()


@pytest.mark.slow
def test_the_controller_log_tells_each_retry_decision_of_a_run(tmp_path):
    import ray
    from ray.train import FailureConfig, RunConfig, ScalingConfig
    from ray.train.torch import TorchTrainer

    def crash(config):
        raise RuntimeError("boom")

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        with pytest.raises(ray.train.TrainingFailedError):
            TorchTrainer(crash, scaling_config=ScalingConfig(num_workers=1),
                         run_config=RunConfig(name="crashes", storage_path=str(tmp_path),
                                              failure_config=FailureConfig(max_failures=1))).fit()
        lines = run_view.controller_log("crashes")
        decisions = [line for line in lines if "[FailurePolicy]" in line]
        assert len(decisions) == 2 and "RETRY" in decisions[0] and "RAISE" in decisions[1], lines
        assert "Error count: 2 (max allowed: 1)" in decisions[1]
        assert run_view.controller_log("no-such-run") == []
    finally:
        ray.shutdown()
