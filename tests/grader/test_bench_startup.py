"""``make bench-startup`` helpers: a run's phases from the Train controller's log (fast, no Ray)."""
import json

from grader import bench_startup, train_logs


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


def test_report_states_the_ratio_to_the_floor():
    rows = [{name: 1.0 for name in bench_startup.PHASES} | {"total": t} for t in (12.0, 10.0, 11.0)]
    report = bench_startup.format_report([{"config": "course", "cluster_s": 3.0, "phases": rows}], 5.0, 2)
    assert "| total | 10.50 |" in report           # median of the warm runs (the first is cold)
    assert "| first run (total) | 12.00 |" in report
    assert "course: 10.50 s = 2.10x the floor" in report
