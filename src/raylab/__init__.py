"""raylab: the small helper package behind the Ray Train & Tune lab kit.

Notebooks stay short by importing what every lab needs from here: starting and stopping the
course's local Ray cluster (:mod:`raylab.cluster`), tiny deterministic data and models
(:mod:`raylab.data`), readable checks for test cells (:mod:`raylab.checks`), plots
(:mod:`raylab.plots`), bounded subprocess runs for demos that can hang (:mod:`raylab.child_process`)
and the environment check (:mod:`raylab.env`).

The package is pinned to the course release: ``raylab.__version__`` starts with the Ray version
the course was checked against.
"""
from raylab.cluster import (
    RAY_VERSION,
    env_vars,
    grading_mode,
    ray_processes,
    scratch_dir,
    setup,
    start_cluster,
    stop_cluster,
    teardown,
)

__version__ = "2.58.0.0"

__all__ = [
    "RAY_VERSION",
    "env_vars",
    "grading_mode",
    "ray_processes",
    "scratch_dir",
    "setup",
    "start_cluster",
    "stop_cluster",
    "teardown",
]
