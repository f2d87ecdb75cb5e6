"""The capstone's worker probe (raylab.checks.capstone_probe): what it counts, in a process of its own
(install() patches PyTorch and ray.train for the whole process)."""
import json
import os
import subprocess
import sys
import textwrap

from raylab import running_example
from raylab.checks import capstone_probe

WATCH = textwrap.dedent("""
    import json, os, sys
    import torch
    from raylab import running_example
    from raylab.checks import capstone_probe
    capstone_probe.install()
    x, _ = running_example.load_split(os.environ["RAYLAB_CAPSTONE_TRAIN_SPLIT"])
    model = running_example.build_model(hidden=8)
    model(x[:300])                      # training forward of 300 training points
    model(x[200:400].double().float())  # 100 of them again, 100 new (dtype round trip)
    with torch.no_grad():
        model(x[1000:1500])             # evaluation: not counted
    model.eval()
    model(x[1500:])                     # eval mode: not counted
    model.train()
    model(torch.randn(50, 2))           # not training rows: not counted
    seen, samples = len(capstone_probe.STATE["rows"]), capstone_probe.STATE["samples"]
    capstone_probe.end_interval(capstone_probe.STATE)  # a report: the epoch's count is kept
    model(x[1000:1600])                 # the next epoch: another part, more rows
    capstone_probe.end_interval(capstone_probe.STATE)
    model(x[:100])
    capstone_probe.end_interval(capstone_probe.STATE)
    print(json.dumps({"rows": seen, "samples": samples, "most_samples": capstone_probe.STATE["most_samples"],
                      "most_rows": capstone_probe.STATE["most_rows"],
                      "reports": capstone_probe.STATE["reports"], "ddp": capstone_probe.STATE["ddp"]}))
""")


def test_counts_distinct_training_rows_of_training_passes_per_report(tmp_path):
    splits = running_example.write_splits(tmp_path / "data")
    env = dict(os.environ, **{capstone_probe.PROBE_DIR_VAR: str(tmp_path / "probe"),
                              capstone_probe.TRAIN_SPLIT_VAR: str(splits["train"])})
    out = subprocess.run([sys.executable, "-c", WATCH], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    # over a whole run a DistributedSampler shows each rank nearly every row: what counts is the
    # most rows between two reports (one epoch)
    # (every row of a training pass counts as a sample, recognised or not: 300 + 200 + 50 random)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {
        "rows": 400, "samples": 550, "most_samples": 600, "most_rows": 600, "reports": 3, "ddp": False}


def test_without_its_variables_install_changes_nothing(tmp_path):
    code = ("import torch; f = torch.nn.Linear.forward\n"
            "from raylab.checks import capstone_probe; capstone_probe.install()\n"
            "assert torch.nn.Linear.forward is f")
    env = {k: v for k, v in os.environ.items()
           if k not in (capstone_probe.PROBE_DIR_VAR, capstone_probe.TRAIN_SPLIT_VAR)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]


def test_job_config_names_the_hook_and_records_skip_workers_that_never_reported(tmp_path):
    env = capstone_probe.job_config_env(str(tmp_path), "/data/train.npz")
    runtime_env = json.loads(env["RAY_JOB_CONFIG_JSON_ENV_VAR"])["runtime_env"]
    assert runtime_env["worker_process_setup_hook"] == "raylab.checks.capstone_probe.install"
    assert runtime_env["env_vars"][capstone_probe.TRAIN_SPLIT_VAR] == "/data/train.npz"
    (tmp_path / "1.json").write_text(json.dumps({"rank": 0, "reports": 2, "train_rows": 1000}))
    (tmp_path / "2.json").write_text(json.dumps({"rank": 1, "reports": 0, "train_rows": 0}))
    (tmp_path / "3.json").write_text("{half a rec")
    assert capstone_probe.records(str(tmp_path)) == [{"rank": 0, "reports": 2, "train_rows": 1000}]
    assert capstone_probe.records(str(tmp_path / "missing")) == []


def test_install_imports_nothing_heavy_and_patches_pytorch_and_ray_train_when_they_are_imported(tmp_path):
    """Ray runs the hook in every process of the job: one that never imports PyTorch must not pay
    for it, and one that imports it after the hook must still be watched."""
    splits = running_example.write_splits(tmp_path / "data")
    code = textwrap.dedent("""
        import json, sys
        from raylab.checks import capstone_probe
        capstone_probe.install()
        before = sorted(m for m in ("torch", "numpy", "ray.train") if m in sys.modules)
        import torch
        import ray.train
        from ray.train.v2.api import train_fn_utils
        patched = [torch.nn.Linear.forward.__name__, torch.nn.parallel.DistributedDataParallel.forward.__name__,
                   ray.train.report.__name__, train_fn_utils.report.__name__]
        print(json.dumps({"before": before, "patched": patched,
                          "split_rows": capstone_probe.STATE.get("split_rows"),
                          "finders_left": [type(f).__name__ for f in sys.meta_path if type(f).__name__ == "_AfterImport"]}))
    """)
    env = dict(os.environ, **{capstone_probe.PROBE_DIR_VAR: str(tmp_path / "probe"),
                              capstone_probe.TRAIN_SPLIT_VAR: str(splits["train"])})
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["before"] == []
    assert seen["patched"] == ["watched_linear", "watched_ddp", "watched_report", "watched_report"]
    assert seen["split_rows"] == len(running_example.load_split(splits["train"])[1])
    assert seen["finders_left"] == []
