"""raylab: the small helper package behind the Ray Train & Tune lab kit.

It has two halves:

* the **learner half**, the top-level modules, is what lab notebooks call while a learner works:
  starting and stopping the course's local Ray cluster (:mod:`raylab.cluster`), tiny deterministic
  data and models (:mod:`raylab.data`, :mod:`raylab.models`, :mod:`raylab.running_example`), plots
  (:mod:`raylab.plots`), hints (:mod:`raylab.hints`), bounded subprocess runs for demos that can hang
  (:mod:`raylab.child_process`), the environment check (:mod:`raylab.env`) and the helpers of each
  lab (:mod:`raylab.ckpt`, :mod:`raylab.ddp`, :mod:`raylab.tuning`, :mod:`raylab.kuberay`, ...);
* the **judging half**, :mod:`raylab.checks`, is what test cells and the course's tests call to
  judge a learner's answer (readable checks in :mod:`raylab.checks.common`, the per-lab checks).

``raylab.checks`` may import the learner half; the learner half never imports ``raylab.checks``
(``tests/code/test_raylab_halves.py``).

The package is pinned to the course release: ``raylab.__version__`` starts with the Ray version
the course was checked against.
"""
from raylab.cluster import (
    RAY_VERSION,
    env_vars,
    grading_mode,
    scratch_dir,
    setup,
    start_cluster,
    stop_cluster,
    teardown,
)
from raylab.processes import ray_processes

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
