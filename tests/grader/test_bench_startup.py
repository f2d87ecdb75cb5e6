"""``make bench-startup`` helpers: a run's phases from the Train controller's log (fast, no Ray)."""
import json

import pytest

from grader.bench import startup as bench_startup, train_logs


def _write_log(folder, run_name, rows):
    logs = folder / "session_x" / "logs" / "train"
    logs.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"timestamp_ns": int(t * 1e9), "message": m, "run_name": run_name}) for t, m in rows]
    (logs / f"ray-train-sys-controller-{run_name}.log").write_text("\n".join(lines + ["not json"]))


def test_phases_follow_the_controller_records(tmp_path):
    _write_log(tmp_path, "empty-0", [
        (102.0, "No checkpoint manager snapshot found."),
        (102.5, "Attempting to start training worker group of size 2"),
        (106.0, "[Worker Group Initialization] 2 worker actors created in 3.5s."),
        (108.5, "[Worker Group Initialization] Train context initialized on workers in 2.5s."),
        (108.7, "Started training worker group of size 2: "),
        (109.7, "Shutting down 2 workers."),
    ])
    records = train_logs.controller_records(tmp_path)
    assert list(records) == [("ray-train-sys-controller-empty-0.log", "empty-0")]
    got = bench_startup.phases(100.0, 110.0, records[("ray-train-sys-controller-empty-0.log", "empty-0")])
    assert got == {"controller start": 2.0, "scheduling": 0.5, "worker processes": 3.5,
                   "context + group": 2.5, "launch": 0.2, "training function": 1.0,
                   "teardown": 0.3, "total": 10.0}
    assert sum(v for k, v in got.items() if k != "total") == got["total"]


def test_a_missing_record_merges_its_phase_into_the_next():
    records = [(1.0, "first"), (4.0, "Started training worker group"), (5.0, "Shutting down 1 workers.")]
    got = bench_startup.phases(0.0, 5.5, records)
    assert got["worker processes"] == 0 and got["launch"] == 3.0 and got["teardown"] == 0.5
    assert round(sum(v for k, v in got.items() if k != "total"), 6) == got["total"] == 5.5


def test_report_states_each_configurations_processes_and_ratio_to_its_floor():
    rows = [{name: 1.0 for name in bench_startup.PHASES} | {"total": t} for t in (12.0, 10.0, 11.0)]
    report = bench_startup.format_report([
        {"config": "plain", "cluster_s": 3.0, "phases": rows, "floor_s": 7.0,
         "processes": bench_startup.run_processes(2) + ["PreemptionWatcher"]},
        {"config": "course", "cluster_s": 3.0, "phases": rows, "floor_s": 5.0,
         "processes": bench_startup.run_processes(2)}])
    assert "Empty 2-worker fit()" in report
    assert "| total | 10.50 | 10.50 |" in report   # median of the warm runs (the first is cold)
    assert "| first run (total) | 12.00 | 12.00 |" in report
    assert "course: each run started 6 processes" in report and "2 x RayTrainWorker" in report
    assert "plain: each run started 7 processes" in report and "PreemptionWatcher" in report
    assert "10.50 s = 2.10x its floor" in report and "10.50 s = 1.50x its floor" in report


def _worker_log(folder, pid, actor):
    logs = folder / "session_x" / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    text = f":job_id:01000000\n:actor_name:{actor}\nsomething the actor printed\n" if actor else ":job_id:01000000\n"
    (logs / f"worker-abc-01000000-{pid}.out").write_text(text)


def test_the_processes_of_a_run_come_from_the_worker_logs(tmp_path):
    # three runs of a 2-worker fit, the cluster-wide coordinator started once, two idle workers
    pid = iter(range(100, 200))
    for _ in range(3):
        for actor in bench_startup.run_processes(2):
            _worker_log(tmp_path, next(pid), actor)
    _worker_log(tmp_path, next(pid), "_AutoscalingCoordinatorActor")
    _worker_log(tmp_path, next(pid), None)
    _worker_log(tmp_path, next(pid), None)
    started = bench_startup.started_actors(tmp_path)
    assert started["RayTrainWorker"] == 6 and started["TrainController"] == 3
    assert bench_startup.per_run(started, 3) == sorted(bench_startup.run_processes(2))


def test_every_process_of_a_run_has_floor_imports_and_an_unknown_one_is_an_error():
    assert set(bench_startup.run_processes(4)) <= set(bench_startup.ACTOR_IMPORTS)
    with pytest.raises(ValueError, match="SomeNewActor"):
        bench_startup.floor_seconds(["TrainController", "SomeNewActor"], repeats=1)
