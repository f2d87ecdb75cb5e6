"""The capstone's check helpers (raylab.checks.capstone) and the orphaned placement group cleaner
(raylab.orphaned_placement_groups). The whole lab, solution and mutants, is graded by its round
trip (tests/grader/test_autograde_roundtrip.py)."""
import time

import pytest

from raylab.checks import capstone as cc


def test_imports_are_read_from_the_syntax_tree(tmp_path):
    script = tmp_path / "s.py"
    script.write_text(
        "import os, json\nimport numpy as np\nfrom ray import tune\nimport torch.nn\n"
        "def f():\n    import raylab.running_example as r\n"
        "m = __import__('raylab')\nimport importlib\nimportlib.import_module('pandas.io')\n"
        "from . import sibling\n")
    assert cc.imported_modules(script) == {"os", "json", "numpy", "ray", "torch", "raylab",
                                           "importlib", "pandas"}
    assert cc.disallowed_imports(script) == ["pandas", "raylab"]
    clean = tmp_path / "c.py"
    clean.write_text("# raylab is not imported here\nimport ray, torch, numpy, sys\ntext = 'import raylab'\n")
    assert cc.disallowed_imports(clean) == []


def test_result_lines_parse_the_agreed_format():
    out = ("(RayTrainWorker pid=1) noise = 3\nbest_config = {\"lr\": 0.05, \"hidden\": 64}\n"
           "best_checkpoint = /a/b c\ntest_accuracy = 0.91\ntune_results=/x\nother = 1\n")
    parsed = cc.result_lines(out)
    assert parsed == {"best_config": {"lr": 0.05, "hidden": 64}, "best_checkpoint": "/a/b c",
                      "test_accuracy": 0.91, "tune_results": "/x"}
    assert cc.result_lines("test_accuracy = high")["test_accuracy"] == "high"


def test_trials_reads_params_and_results(tmp_path):
    import json

    for i, rows in enumerate([3, 1]):
        folder = tmp_path / f"trial_{i}"
        folder.mkdir()
        (folder / "params.json").write_text(json.dumps({"lr": i}))
        (folder / "result.json").write_text("".join(json.dumps({"training_iteration": k + 1}) + "\n"
                                                    for k in range(rows)))
    (tmp_path / "not_a_trial").mkdir()
    found = cc.trials(tmp_path)
    assert [(t["config"]["lr"], len(t["rows"])) for t in found] == [(0, 3), (1, 1)]


@pytest.mark.slow
def test_orphaned_placement_group_of_a_killed_actor_is_found_and_removed(train_cluster):
    """What happens to a Train run's workers when Tune stops its trial, in miniature: an actor
    creates a placement group and is killed. Ray keeps the group (its job is still alive); the
    cleaner removes it, and leaves a group the driver made alone."""
    import ray
    from ray.util.placement_group import placement_group, placement_group_table, remove_placement_group

    from raylab import orphaned_placement_groups as orphans

    @ray.remote(num_cpus=0)
    class Creator:
        def make(self):
            pg = placement_group([{"CPU": 1}])
            ray.get(pg.ready(), timeout=60)
            return pg.id.hex()

    mine = placement_group([{"CPU": 1}])
    ray.get(mine.ready(), timeout=60)
    creator = Creator.remote()
    made = ray.get(creator.make.remote(), timeout=120)
    assert orphans.find() == []
    ray.kill(creator)
    deadline = time.monotonic() + 30
    while not orphans.find() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert [pg.hex() for pg in orphans.find()] == [made]
    assert placement_group_table()[made]["state"] == "CREATED", "Ray itself keeps it"
    with orphans.running(interval_s=0.2) as cleaner:
        while cleaner.removed == 0 and time.monotonic() < deadline + 30:
            time.sleep(0.2)
    assert cleaner.removed == 1
    assert placement_group_table()[made]["state"] == "REMOVED"
    assert placement_group_table()[mine.id.hex()]["state"] == "CREATED"
    remove_placement_group(mine)
