"""Unit tests of raylab.ckpt: the five-piece training job, its state, fault injection, child runs.

No Ray cluster is started here; the child-process tests run plain Python functions (connect=False).
"""
import os
import time

import pytest
import torch

from raylab import child_process, ckpt


def test_settings_merge_defaults_and_keep_extra_keys():
    cfg = ckpt.settings({"steps": 3, "trace": "/x"})
    assert cfg["steps"] == 3 and cfg["trace"] == "/x" and cfg["seed"] == ckpt.DEFAULTS["seed"]
    assert ckpt.settings(None) == ckpt.DEFAULTS


def test_cursor_walks_epochs_and_restores_its_position():
    a = ckpt.BatchCursor(n=10, batch_size=4, seed=1)
    first = [a.next_indices().tolist() for _ in range(3)]  # 2 batches, then a new epoch
    assert a.state_dict() == {"epoch": 1, "offset": 4}
    assert sorted(first[0] + first[1]) == sorted(set(first[0] + first[1]))  # no repeats in an epoch
    b = ckpt.BatchCursor(n=10, batch_size=4, seed=1)
    b.load_state_dict(a.state_dict())
    assert a.next_indices().tolist() == b.next_indices().tolist()
    c = ckpt.BatchCursor(n=10, batch_size=4, seed=1)
    assert [c.next_indices().tolist() for _ in range(3)] == first  # deterministic


def test_cursor_leaves_the_global_rng_alone():
    torch.manual_seed(123)
    before = torch.get_rng_state()
    cur = ckpt.BatchCursor(n=16, batch_size=4)
    for _ in range(6):
        cur.next_indices()
    assert torch.equal(before, torch.get_rng_state())


def test_cursor_rejects_bad_batch_size():
    with pytest.raises(ValueError):
        ckpt.BatchCursor(n=4, batch_size=5)


def test_reference_run_is_deterministic():
    a = ckpt.reference_run({"steps": 4})
    b = ckpt.reference_run({"steps": 4})
    assert a["losses"] == b["losses"] and len(a["losses"]) == 4
    assert ckpt.max_param_diff(a["state"]["model"], b["state"]["model"]) == 0.0
    assert a["state"]["step"] == 4


@pytest.mark.parametrize("stop_after", [1, 3, 5])
def test_complete_state_resumes_exactly(stop_after):
    clean = ckpt.reference_run({"steps": 8})
    resumed = ckpt.interrupted_run({"steps": 8}, stop_after=stop_after)
    assert resumed["resumed_at"] == stop_after
    assert resumed["losses"] == clean["losses"]
    assert ckpt.max_param_diff(resumed["state"]["model"], clean["state"]["model"]) == 0.0


@pytest.mark.parametrize("left_out", ckpt.STATE_KEYS)
@pytest.mark.parametrize("stop_after", [1, 3, 5])
def test_every_piece_of_state_matters(left_out, stop_after):
    clean = ckpt.reference_run({"steps": 8})
    parts = [p for p in ckpt.STATE_KEYS if p != left_out]
    resumed = ckpt.interrupted_run({"steps": 8}, stop_after=stop_after, parts=parts)
    assert ckpt.max_param_diff(resumed["state"]["model"], clean["state"]["model"]) > 1e-3


def test_restore_rejects_unknown_parts():
    job = ckpt.build({"steps": 2})
    with pytest.raises(ValueError):
        ckpt.restore(job, ckpt.full_state(job, 0), parts=["model", "weights"])


def test_save_and_load_state_round_trip(tmp_path):
    job = ckpt.build({"steps": 3})
    for s in range(2):
        job.train_step(s)
    path = ckpt.save_state(job, 2, str(tmp_path))
    assert os.path.basename(path) == ckpt.STATE_FILE
    state = ckpt.load_state(str(tmp_path))
    assert set(state) == set(ckpt.STATE_KEYS) and state["step"] == 2
    weights = {k: v.clone() for k, v in job.model.state_dict().items()}
    expected = job.train_step(2)  # the uninterrupted job's next step (it advances the global RNG)
    fresh = ckpt.build({"steps": 3})
    assert ckpt.restore(fresh, state) == 2  # puts the RNG back where it was when saved
    assert ckpt.max_param_diff(fresh.model.state_dict(), weights) == 0.0
    assert fresh.train_step(2) == expected


def test_failure_is_injected_once_per_step_with_a_marker(tmp_path):
    marker = str(tmp_path / "failed")
    job = ckpt.build({"steps": 6, "fail_at_step": [1, 3], "fail_marker": marker})
    job.train_step(0)
    with pytest.raises(ckpt.InjectedFailure):
        job.train_step(1)
    job.train_step(1)  # the marker lets the retry pass
    job.train_step(2)
    with pytest.raises(ckpt.InjectedFailure):
        job.train_step(3)
    assert sorted(os.listdir(tmp_path)) == ["failed.step1", "failed.step3"]


def test_failure_without_marker_repeats():
    job = ckpt.build({"fail_at_step": 0})
    for _ in range(2):
        with pytest.raises(ckpt.InjectedFailure):
            job.train_step(0)
    assert ckpt.fail_steps(4) == [4] and ckpt.fail_steps([1, "2"]) == [1, 2]


def test_reference_run_ignores_fault_injection_and_trace(tmp_path):
    cfg = {"steps": 3, "fail_at_step": 1, "trace": str(tmp_path / "t.txt")}
    assert ckpt.reference_run(cfg)["losses"] == ckpt.reference_run({"steps": 3})["losses"]
    assert not (tmp_path / "t.txt").exists()


def test_trace_groups_steps_by_process(tmp_path):
    trace = tmp_path / "trace.txt"
    trace.write_text("11 0 1.5\n11 1 1.25\n12 1 1.25\n12 2 1.0\n")
    assert ckpt.read_trace(str(trace)) == [[(0, 1.5), (1, 1.25)], [(1, 1.25), (2, 1.0)]]
    assert ckpt.read_trace(str(tmp_path / "missing.txt")) == []
    job = ckpt.build({"steps": 2, "trace": str(tmp_path / "live.txt")})
    losses = [job.train_step(s) for s in range(2)]
    assert ckpt.read_trace(str(tmp_path / "live.txt")) == [[(0, losses[0]), (1, losses[1])]]


def test_max_param_diff():
    a = {"w": torch.zeros(2), "b": torch.ones(1)}
    assert ckpt.max_param_diff(a, {"w": torch.tensor([0.0, 0.5]), "b": torch.ones(1)}) == 0.5
    assert ckpt.max_param_diff(a, {"w": torch.zeros(2)}) == float("inf")


def _child_value():
    import os

    return {"pid": os.getpid(), "env": os.environ.get("RAYLAB_TEST_FLAG")}


def _child_error():
    raise KeyError("boom")


def _child_sleeps():
    import time

    time.sleep(60)


def test_run_in_child_returns_value_in_another_process():
    out = child_process.run_in_child(_child_value, timeout_s=60, env={"RAYLAB_TEST_FLAG": "yes"}, connect=False)
    assert out.error is None and not out.timed_out
    assert out.value["pid"] != os.getpid() and out.value["env"] == "yes"
    assert "RAYLAB_TEST_FLAG" not in os.environ


def test_run_in_child_reports_errors_and_time_limits():
    out = child_process.run_in_child(_child_error, timeout_s=60, connect=False)
    assert out.value is None and out.error.startswith("KeyError")
    started = time.monotonic()
    out = child_process.run_in_child(_child_sleeps, timeout_s=3, connect=False)
    assert out.timed_out and "killed after 3" in out.error
    assert time.monotonic() - started < 30


def _own_step(job):
    """A step written without Job.train_step, as lab 03's learners write it."""
    idx = job.cursor.next_indices()
    loss = torch.nn.functional.cross_entropy(job.model(job.x[idx]), job.y[idx])
    loss.backward()
    job.optimizer.step()
    job.optimizer.zero_grad(set_to_none=False)
    job.scheduler.step()
    return loss.item()


def test_cursor_position_counts_batches_across_epochs():
    cur = ckpt.BatchCursor(n=10, batch_size=4)
    seen = []
    for _ in range(5):
        seen.append(cur.position)
        cur.next_indices()
    assert seen == [0, 1, 2, 3, 4] and cur.position == 5  # 2 batches an epoch; the rest is dropped


def test_a_step_written_without_train_step_crashes_at_the_planned_batch(tmp_path):
    marker, log = str(tmp_path / "failed"), str(tmp_path / "batches.txt")
    job = ckpt.build({"fail_at_step": 2, "fail_marker": marker, "batch_log": log})
    _own_step(job), _own_step(job)
    with pytest.raises(ckpt.InjectedFailure):
        _own_step(job)
    assert job.cursor.position == 2  # the crash comes before the batch is drawn
    _own_step(job)  # the marker lets the retry pass
    assert ckpt.read_batch_log(log) == [[0, 1, 2]]
    assert sorted(os.listdir(tmp_path)) == ["batches.txt", "failed.step2"]


def test_a_differently_written_step_matches_the_reference():
    ref = ckpt.reference_run({"steps": 6}, steps=6)
    with ckpt.single_thread():
        job = ckpt.build({"steps": 6})
        losses = [_own_step(job) for _ in range(6)]
    assert losses == pytest.approx(ref["losses"], rel=1e-6)
    assert ckpt.max_param_diff(job.model.state_dict(), ref["state"]["model"]) < 1e-6


def test_batch_log_groups_batches_by_process(tmp_path):
    log = tmp_path / "b.txt"
    log.write_text("7 0\n7 1\n9 1\n9 2\n")
    assert ckpt.read_batch_log(str(log)) == [[0, 1], [1, 2]]
    assert ckpt.read_batch_log(str(tmp_path / "missing.txt")) == []
