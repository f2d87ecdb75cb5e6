"""Ask a real multi-node Ray cluster, simulated on this machine, whether placement groups fit.

Ray Train reserves its workers as one placement group: ``num_workers`` bundles, each
``resources_per_worker``, placed with the ``placement_strategy`` of the ``ScalingConfig``.
Whether that group can be placed depends on the *shape* of the nodes, not only on the cluster's
totals. :func:`simulate_placements` starts a throwaway cluster with the node shapes you give
(``ray.cluster_utils.Cluster``: one raylet per node, all on this machine) in a separate process,
asks Ray to place each request in turn, and reports which ones it placed within a bounded wait.
It never touches the lab's own cluster.
"""
from __future__ import annotations

import json

from raylab.i18n import _

STRATEGIES = ("PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD")

_SNIPPET = r'''
import json, time
import ray
from ray.cluster_utils import Cluster
from ray.util.placement_group import placement_group, remove_placement_group

NODES = json.loads({nodes!r})
REQUESTS = json.loads({requests!r})
WAIT_S = {wait_s!r}
STORE = 80 * 1024 * 1024


def node_args(shape):
    shape = dict(shape)
    args = {{"num_cpus": shape.pop("CPU", 0), "num_gpus": shape.pop("GPU", 0),
             "object_store_memory": STORE}}
    if shape:
        args["resources"] = shape
    return args


cluster = Cluster(initialize_head=True, head_node_args=dict(node_args(NODES[0]), include_dashboard=False))
for shape in NODES[1:]:
    cluster.add_node(**node_args(shape))
ray.init(address=cluster.address, logging_level="ERROR", log_to_driver=False)
cluster.wait_for_nodes()
full = {{k: v for k, v in ray.cluster_resources().items() if k in {{r for s in NODES for r in s}}}}


def wait_until_free(limit_s=10.0):
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        free = ray.available_resources()
        if all(abs(free.get(k, 0.0) - v) < 1e-6 for k, v in full.items()):
            return
        time.sleep(0.05)


outcomes = []
for req in REQUESTS:
    wait_until_free()
    bundles = [dict(req["per_worker"]) for _ in range(req["num_workers"])]
    pg = placement_group(bundles, strategy=req["strategy"])
    placed = bool(pg.wait(timeout_seconds=WAIT_S))
    available = ray.available_resources()
    free = {{k: available.get(k, 0.0) for k in full}}
    outcomes.append({{"placed": placed, "free_after_wait": free}})
    remove_placement_group(pg)
ray.shutdown()
cluster.shutdown()
print("PLACEMENTS_JSON " + json.dumps(outcomes))
'''


def simulate_placements(nodes: list[dict], requests: list[dict], *, wait_s: float = 3.0,
                        timeout_s: float = 240.0) -> list[dict]:
    """For each request, whether real Ray placed its placement group on a cluster of ``nodes``.

    Returns one dict per request: ``"placed"`` (bool) and ``"free_after_wait"`` (the cluster's
    free resources at the end of the wait: a group that is still pending holds nothing).

    ``nodes`` is a list of node shapes such as ``{"CPU": 2}`` or ``{"CPU": 4, "GPU": 1}`` (the
    first is the head node; GPUs are logical, so none is needed). Each request is a dict with
    ``num_workers``, ``per_worker`` (one worker's resources) and ``strategy`` (PACK, SPREAD,
    STRICT_PACK or STRICT_SPREAD): exactly the placement group a Ray Train worker group asks for.
    A request counts as not placed when Ray has not placed it within ``wait_s`` seconds; requests
    run one at a time on an otherwise idle cluster. The whole run is killed at ``timeout_s``.
    """
    from raylab.child_process import run_snippet

    for req in requests:
        if req["strategy"] not in STRATEGIES:
            raise ValueError(_("unknown strategy {strategy!r}; use one of {strategies}").format(
                strategy=req["strategy"], strategies=STRATEGIES))
    code = _SNIPPET.format(nodes=json.dumps(nodes), wait_s=float(wait_s),
                           requests=json.dumps([{"num_workers": int(r["num_workers"]),
                                                 "per_worker": dict(r["per_worker"]),
                                                 "strategy": r["strategy"]} for r in requests]))
    res = run_snippet(code, timeout_s=timeout_s,
                      env={"RAY_SCHEDULER_EVENTS": "0", "RAY_DEDUP_LOGS": "0"})
    for line in res.stdout.splitlines():
        if line.startswith("PLACEMENTS_JSON "):
            return json.loads(line.split(" ", 1)[1])
    raise RuntimeError(_("the simulated cluster did not report (rc={rc}, timed out={timed_out}):").format(
        rc=res.returncode, timed_out=res.timed_out) + "\n" + res.tail(20, "stderr"))


def describe(request: dict) -> str:
    """``"3 x {'CPU': 1} STRICT_PACK"``: a request in one short line."""
    return f"{request['num_workers']} x {request['per_worker']} {request['strategy']}"
