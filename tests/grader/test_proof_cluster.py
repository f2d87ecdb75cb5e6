"""make prove ADDRESS=...: a proof's gradings run as tasks of a running Ray cluster (simulated
here with two nodes), each grading in its own sandbox on its node, and give what the ledger
holds for them."""
import pytest

from grader.proof import keys, ledger, plan, roundtrip, roundtrip_report

pytestmark = pytest.mark.slow
LAB = "00_lab_setup"


def test_gradings_on_a_ray_cluster_match_the_ledger(tmp_path, proven_env):
    import ray
    from ray.cluster_utils import Cluster

    stored = ledger.read(LAB)
    current = plan.lab_plan(LAB, tmp_path / "plan", keys.KeyBuilder(roundtrip.OPTIONS))
    audited = frozenset(sorted(k for s, k in current.gradings.items() if s not in current.misses)[:2])
    cluster = Cluster()
    try:  # a head that fails to start (a loaded machine) must not leak its processes
        cluster.add_node(num_cpus=2, include_dashboard=False)
        cluster.add_node(num_cpus=2)
        ray.init(address=cluster.address, log_to_driver=False)
        try:
            rt = roundtrip.run(LAB, tmp_path / "rt", workers=2, stored=stored, audit=audited, address=cluster.address)
        finally:
            ray.shutdown()
    finally:
        cluster.shutdown()
    assert len(rt.audited) == len(audited) == 2, roundtrip_report.report(rt)
    assert not rt.problems, roundtrip_report.report(rt)
    # graded on nodes of this machine's class and environment: recorded under the same keys
    assert set(rt.records) == set(current.gradings.values())
