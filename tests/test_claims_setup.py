"""Claims of lab 00 checked against the installed Ray 2.58.0 (real local cluster, no mocks)."""
import importlib.metadata as md
import os

import pytest


def test_c01_ray_extras_do_not_install_torch():
    reqs = md.requires("ray") or []
    extra_reqs = [r for r in reqs if 'extra == "train"' in r or 'extra == "tune"' in r]
    assert extra_reqs, "Ray's metadata should list the train/tune extras"
    names = {r.split(";")[0].strip().split("[")[0].split("=")[0].split(">")[0].split("<")[0].strip().lower()
             for r in extra_reqs}
    assert "pandas" in names and "pyarrow" in names
    assert not {"torch", "tensorflow", "jax"} & names
    assert md.version("ray") == "2.58.0"


@pytest.mark.slow
def test_c32_logical_resources_and_object_store_are_not_os_limits():
    import numpy as np
    import ray

    import raylab

    raylab.start_cluster(quiet=True)
    try:
        @ray.remote(num_cpus=1)
        def look():
            return len(os.sched_getaffinity(0)), os.environ.get("OMP_NUM_THREADS")

        cores, omp = ray.get(look.remote())
        assert cores == len(os.sched_getaffinity(0))  # no pinning to the 1 CPU asked for
        assert omp == "1"  # only a thread-count hint
        assert ray.cluster_resources()["object_store_memory"] == 80 * 1024 * 1024
        refs = [ray.put(np.full(30 * 2**20 // 8, i, dtype=np.float64)) for i in range(4)]  # 120 MiB
        assert [float(ray.get(r)[0]) for r in refs] == [0.0, 1.0, 2.0, 3.0]
    finally:
        assert raylab.stop_cluster() == []


@pytest.mark.slow
def test_c32_object_store_minimum_is_enforced():
    import ray

    from raylab.cluster import descendant_pids, kill_processes, new_descendants

    before = descendant_pids()
    try:
        with pytest.raises(ValueError, match="minimum allowed"):
            ray.init(address="local", num_cpus=1, include_dashboard=False,
                     object_store_memory=70 * 1024 * 1024)
        assert not ray.is_initialized()
    finally:
        # the refused init has already started part of a head (GCS, monitor): remove it, or it
        # lives as long as this process
        kill_processes(new_descendants(before))
