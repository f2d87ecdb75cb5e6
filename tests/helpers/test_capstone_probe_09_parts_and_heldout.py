"""The capstone probe's record of which training rows a worker took in its last epoch and of the
held-out rows it trained on (raylab.checks.capstone_probe), and the check that compares the workers of one
run (raylab.checks.capstone.shared_parts). In a process of its own: install() patches PyTorch."""
import json
import textwrap

from raylab.checks import capstone as capstone_checks
from raylab.checks import capstone_probe

WATCH = textwrap.dedent("""
    import json, os
    import torch
    from raylab import running_example
    from raylab.checks import capstone_probe
    capstone_probe.install()
    folder = os.path.dirname(os.environ["RAYLAB_CAPSTONE_TRAIN_SPLIT"])
    x, _ = running_example.load_split(os.path.join(folder, "train.npz"))
    xv, _ = running_example.load_split(os.path.join(folder, "val.npz"))
    xt, _ = running_example.load_split(os.path.join(folder, "test.npz"))
    model = running_example.build_model(hidden=8)
    model(x[0::2])                      # epoch 1: the even rows
    with torch.no_grad():
        model(xv)                       # evaluation on val: not training, not counted
    capstone_probe.end_interval(capstone_probe.STATE)
    model(x[1:200:2])                   # epoch 2: 100 odd rows
    model(xv).sum()                     # validation in training mode, gradients on, no backward: not trained on
    model(torch.cat([xv[:30], xt[:5]])).sum().backward()  # 35 held-out rows trained on
    capstone_probe.end_interval(capstone_probe.STATE)
    model(xv[:30]).sum().backward()     # the same 30 again: distinct rows count once
    state = capstone_probe.STATE
    print(json.dumps({"last_rows": state["last_rows"], "heldout": len(state["heldout"]),
                      "most_rows": state["most_rows"]}))
""")


def test_records_the_last_epochs_rows_and_every_held_out_row_trained_on(probe_watch):
    seen = probe_watch(WATCH)
    assert seen["last_rows"] == list(range(1, 200, 2))  # indices into train.npz, of the epoch just ended
    assert seen["heldout"] == 35
    assert seen["most_rows"] == 1000


def test_apart_runs_the_rank_renumbering_in_the_jobs_processes(tmp_path):
    env = capstone_probe.job_config_env(str(tmp_path), "/data/train.npz", apart=True)
    runtime_env = json.loads(env["RAY_JOB_CONFIG_JSON_ENV_VAR"])["runtime_env"]
    assert runtime_env["env_vars"][capstone_probe.APART_VAR] == "1"
    plain = json.loads(capstone_probe.job_config_env(str(tmp_path), "/data/train.npz")["RAY_JOB_CONFIG_JSON_ENV_VAR"])
    assert capstone_probe.APART_VAR not in plain["runtime_env"]["env_vars"]


def _worker(group, rank, rows, reports=3):
    return {"group": group, "run": "train-x", "rank": rank, "reports": reports, "last_rows": rows}


def test_shared_parts_tells_two_rank_0_workers_from_a_sharded_run():
    evens, odds = list(range(0, 2000, 2)), list(range(1, 2000, 2))
    assert capstone_checks.shared_parts([_worker("a", 0, evens), _worker("a", 1, odds)]) == []
    # a DistributedSampler pads an odd split with one repeated row: still its own part
    assert capstone_checks.shared_parts([_worker("a", 0, evens + [1]), _worker("a", 1, odds)]) == []
    both_rank_0 = capstone_checks.shared_parts([_worker("a", 0, evens), _worker("a", 0, evens)])
    assert len(both_rank_0) == 1 and "1000 of the same points" in both_rank_0[0]
    # two runs (two trials) that each deal the same halves, or workers at another epoch: not compared
    assert capstone_checks.shared_parts([_worker("a", 0, evens), _worker("b", 0, evens)]) == []
    assert capstone_checks.shared_parts([_worker("a", 0, evens, 2), _worker("a", 1, evens, 3)]) == []
    # a script whose points are changed before the model leaves no recognised row: nothing to compare
    assert capstone_checks.shared_parts([_worker("a", 0, []), _worker("a", 1, [])]) == []
