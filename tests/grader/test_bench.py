"""``make bench`` helpers: table formatting and the start-up accounting (fast, no Ray), and which
cells a learner-mode run executes (one small notebook run)."""
import json

import nbformat
import pytest

from grader.bench import cells as bench_cells, labs, train_logs


def _row(lab, seconds, startup, **kw):
    return labs.LabBench(lab=lab, status=kw.get("status", "ok"), seconds=seconds,
                          peak_rss_mib=kw.get("peak", 1000.0), ray_start_s=kw.get("ray", 0.0),
                          train_start_s=kw.get("train", 0.0), train_runs=kw.get("runs", 0),
                          startup_s=startup)


def test_format_table_rows_and_total():
    table = labs.format_table([_row("00_lab_setup", 40.0, 10.0, ray=10.0, peak=900.0),
                                _row("01_train", 60.0, 30.0, ray=8.0, train=22.0, runs=1, peak=2100.0,
                                     status="timeout")])
    lines = table.splitlines()
    assert lines[0].startswith("| lab | status | seconds | peak memory (MiB)")
    assert len(lines) == 5 and all(line.startswith("|") and line.endswith("|") for line in lines)
    assert "| 00_lab_setup | ok | 40.0 | 900 | 10.0 | 0.0 | 0 | 25% |" in lines
    assert "| 01_train | timeout | 60.0 | 2100 | 8.0 | 22.0 | 1 | 50% |" in lines
    assert lines[-1] == "| **total** | 1/2 ok | 100.0 | 2100 (max) | 18.0 | 22.0 | 1 | 40% |"
    assert labs.format_table([]).count("\n") == 1  # header only


def test_merged_length_counts_overlaps_once():
    assert bench_cells.merged_length([]) == 0
    assert bench_cells.merged_length([(0, 2), (1, 3), (5, 6), (6, 6)]) == 4


def test_startup_intervals_from_cells_and_train_logs(tmp_path):
    nb = nbformat.v4.new_notebook()
    cells = [("import raylab\nlab = raylab.setup('x')", "2026-01-01T00:00:00Z", "2026-01-01T00:00:08Z"),
             ("trainer.fit()", "2026-01-01T00:00:10Z", "2026-01-01T00:00:40Z"),
             ("print('done')", "2026-01-01T00:00:41Z", "2026-01-01T00:00:41.5Z")]
    for source, start, end in cells:
        cell = nbformat.v4.new_code_cell(source)
        cell.metadata["execution"] = {"iopub.execute_input": start, "shell.execute_reply": end}
        nb.cells.append(cell)
    t0 = bench_cells._ts("2026-01-01T00:00:00Z")
    logs = tmp_path / "ray" / "session_x" / "logs" / "train"
    logs.mkdir(parents=True)
    # two runs in the fit cell: the first one pays for the driver and controller launch
    for name, first, up in (("a", 16, 25), ("b", 30, 36)):
        records = [{"timestamp_ns": int((t0 + first) * 1e9), "message": "Requesting resources"},
                   {"timestamp_ns": int((t0 + up) * 1e9), "message": "Started training worker group of size 2: "}]
        (logs / f"ray-train-sys-controller-{name}.log").write_text("\n".join(json.dumps(r) for r in records))
    runs = train_logs.train_runs(tmp_path)
    assert len(runs) == 2
    ray_iv, train_iv = bench_cells.startup_intervals(bench_cells.cell_intervals(nb), runs)
    assert bench_cells.merged_length(ray_iv) == 8
    assert bench_cells.merged_length(train_iv) == (25 - 10) + (36 - 30)


def test_time_by_kind_splits_seconds_and_runs_between_setup_exercises_and_demos():
    nb = nbformat.v4.new_notebook()
    cells = [("lab = raylab.setup('x')", {}, 0, 8),
             ("def answer(): ...", {"solution": True, "grade": False}, 9, 9.5),
             ("check(answer())  # runs the learner's fit()", {"grade": True, "solution": False}, 10, 30),
             ("demo_trainer.fit()", {}, 31, 51),
             ("print('done')", {}, 52, 52.5)]
    t0 = bench_cells._ts("2026-01-01T00:00:00Z")
    for source, meta, start, end in cells:
        cell = nbformat.v4.new_code_cell(source)
        cell.metadata["nbgrader"] = meta
        cell.metadata["execution"] = {"iopub.execute_input": dt_iso(t0 + start),
                                      "shell.execute_reply": dt_iso(t0 + end)}
        nb.cells.append(cell)
    runs = [(t0 + 12, t0 + 20), (t0 + 22, None), (t0 + 33, t0 + 40)]  # a run that never came up counts
    kinds = bench_cells.time_by_kind(nb, bench_cells.cell_intervals(nb), runs)
    assert kinds == {"setup": {"seconds": 8.0, "train_runs": 0},
                     "exercise": {"seconds": 20.5, "train_runs": 2},
                     "demo": {"seconds": 20.5, "train_runs": 1}}
    row = _row("01_train", 55.0, 20.0)
    row.by_kind = kinds
    table = labs.format_kinds([row]).splitlines()
    assert table[2] == "| 01_train | 8.0 | 20.5 (2) | 20.5 (1) | 6.0 |"
    assert table[-1] == "| **total** | 8.0 | 20.5 (2) | 20.5 (1) | 6.0 |"


def dt_iso(epoch: float) -> str:
    import datetime as dt
    return dt.datetime.fromtimestamp(epoch, dt.timezone.utc).isoformat().replace("+00:00", "Z")


@pytest.mark.slow
def test_learner_mode_runs_a_notebook_without_its_hidden_tests(tmp_path):
    """A learner's finished copy has no hidden tests, so learner-mode timings leave them out; a
    grading run keeps them."""
    from grader.authoring import text as authoring
    from grader.authoring.run_solutions import run_notebook

    nb = authoring.new_notebook([
        authoring.make_cell("answer", "answer", "def double(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION"),
        authoring.make_cell("tests", "tests", "assert double(2) == 4\n### BEGIN HIDDEN TESTS\n"
                            "raise RuntimeError('a hidden test ran')\n### END HIDDEN TESTS", points=1),
    ])
    path = tmp_path / "probe.ipynb"
    authoring.write(nb, path)
    assert run_notebook(path, grading=False, hidden_tests=False, workdir=tmp_path)[0] == "ok"
    assert "a hidden test ran" in run_notebook(path, grading=True, workdir=tmp_path)[0]
