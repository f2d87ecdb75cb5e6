"""raylab.kuberay: offline validation against the vendored KubeRay v1.7.0 CRDs, and the readers.

Fast: no Ray cluster, no Kubernetes. The CRD files are data copied from the course's shared
reference folder; these tests pin them (hashes) and check the validator against the schema's own
rules on hand-made manifests.
"""
import copy
import hashlib
import re

import pytest
import yaml

from raylab import kuberay, kuberay_groups, kuberay_schema, plan_review

CLEAN = "rayjob_tune_gpu.yaml"


def _paths(problems):
    return [p.path for p in problems]


def _clean():
    return kuberay.load_example(CLEAN)


def _worker(m, i=0):
    return m["spec"]["rayClusterSpec"]["workerGroupSpecs"][i]


# ---- the vendored data ---------------------------------------------------------------------
def test_crds_are_vendored_next_to_the_module_unchanged():
    readme = (kuberay_schema.CRD_DIR / "README.md").read_text()
    assert "v1.7.0" in readme and kuberay.KUBERAY_VERSION == "v1.7.0"
    for kind, name in kuberay_schema.CRD_FILES.items():
        path = kuberay_schema.CRD_DIR / name
        assert path.parent == kuberay_schema.CRD_DIR and path.exists()
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        assert digest in readme, f"{name} differs from the copy the README records"
        crd = kuberay_schema.crd(kind)
        assert crd["kind"] == "CustomResourceDefinition" and crd["spec"]["names"]["kind"] == kind
        assert kuberay_schema.served_versions(kind) == {"v1": False, "v1alpha1": True}


def test_examples_ship_with_the_package_and_parse():
    names = kuberay.example_names()
    assert {CLEAN, "rayjob_broken.yaml", "raycluster_cpu.yaml"} <= set(names)
    for name in names:
        assert isinstance(kuberay.load_example(name), dict)


# ---- validation ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", [CLEAN, "raycluster_cpu.yaml"])
def test_clean_examples_validate(name):
    assert kuberay.validate_manifest(kuberay.load_example(name)) == []
    assert kuberay.operator_problems(kuberay.load_example(name)) == []


def test_broken_example_reports_every_mistake_with_its_path():
    problems = kuberay.validate_manifest(kuberay.load_example("rayjob_broken.yaml"))
    text = {str(p) for p in problems}
    assert _paths(problems) == sorted(_paths(problems)), "problems come sorted by path"
    expected = {
        "spec.rayClusterSpec.headGroupSpec.rayStartParams.num-cpus": "expected a string, got the integer 4",
        "spec.rayClusterSpec.workerGroupSpecs[0].maxReplica": "unknown field",
        "spec.rayClusterSpec.workerGroupSpecs[0].maxReplicas": "required field is missing",
        "spec.rayClusterSpec.workerGroupSpecs[0].template.spec.containers[0].resources.limits.cpu":
            "is not a Kubernetes quantity",
        "spec.ttlSecondsAfterFinished": "expected an integer, got the string '600'",
    }
    assert len(problems) == len(expected)
    for path, fragment in expected.items():
        assert any(t.startswith(path + ":") and fragment in t for t in text), (path, text)


def test_check_manifest_raises_with_all_problems():
    with pytest.raises(kuberay.ManifestInvalid) as info:
        kuberay.check_manifest(kuberay.example_text("rayjob_broken.yaml"))
    assert isinstance(info.value, ValueError) and len(info.value.problems) == 5
    assert "5 problem(s)" in str(info.value)
    assert kuberay.check_manifest(_clean())["kind"] == "RayJob"


def test_unknown_fields_are_errors_only_in_strict_mode():
    m = _clean()
    m["spec"]["shutdownAfterJobFinish"] = True  # a typo the API server would silently drop
    assert _paths(kuberay.validate_manifest(m)) == ["spec.shutdownAfterJobFinish"]
    assert kuberay.validate_manifest(m, strict=False) == []
    # maps with free keys stay open in strict mode
    m = _clean()
    m["metadata"]["labels"] = {"team": "ml"}
    m["spec"]["rayClusterSpec"]["headGroupSpec"]["rayStartParams"]["dashboard-host"] = "0.0.0.0"
    assert kuberay.validate_manifest(m) == []


@pytest.mark.parametrize("value, ok", [(8, True), ("8", True), ("500m", True), ("1.5", True),
                                       ("32Gi", True), ("1e3", True), ("8 cores", False),
                                       ("two", False), ([8], False), (True, False)])
def test_quantities_are_int_or_string_with_the_quantity_pattern(value, ok):
    m = _clean()
    _worker(m)["template"]["spec"]["containers"][0]["resources"]["limits"]["cpu"] = value
    problems = kuberay.validate_manifest(m)
    assert (problems == []) is ok, problems


def test_types_enums_and_int32_format_are_checked():
    m = _clean()
    m["spec"]["activeDeadlineSeconds"] = 2**31  # does not fit int32
    m["spec"]["shutdownAfterJobFinishes"] = "yes please"
    m["spec"]["deletionStrategy"] = {"onSuccess": {"policy": "DeleteEverything"},
                                     "onFailure": {"policy": "DeleteCluster"}}
    problems = {p.path: p.message for p in kuberay.validate_manifest(m)}
    assert "int32" in problems["spec.activeDeadlineSeconds"]
    assert problems["spec.shutdownAfterJobFinishes"].startswith("expected a boolean")
    assert "is not one of" in problems["spec.deletionStrategy.onSuccess.policy"]
    assert len(problems) == 3


def test_rayjob_and_raycluster_use_their_own_schema():
    cluster = kuberay.load_example("raycluster_cpu.yaml")
    cluster["spec"]["entrypoint"] = "python x.py"  # a RayJob field, unknown to RayCluster
    assert _paths(kuberay.validate_manifest(cluster)) == ["spec.entrypoint"]


def test_api_version_kind_and_name_are_checked_first():
    m = _clean()
    m["apiVersion"] = "ray.io/v2"
    [p] = kuberay.validate_manifest(m)
    assert p.path == "apiVersion" and "ray.io/v1" in p.message
    m["apiVersion"] = "ray.io/v1alpha1"  # deprecated but still served, with its own older schema
    assert _paths(kuberay.validate_manifest(m)) == ["spec.activeDeadlineSeconds", "spec.backoffLimit"]
    cluster = kuberay.load_example("raycluster_cpu.yaml")
    cluster["apiVersion"] = "ray.io/v1alpha1"
    assert kuberay.validate_manifest(cluster) == []
    m["kind"] = "RayService"
    assert _paths(kuberay.validate_manifest(m)) == ["kind"]
    m = _clean()
    del m["metadata"]["name"]
    assert _paths(kuberay.validate_manifest(m)) == ["metadata.name"]
    m["metadata"]["name"] = "Tune_Sweep"
    assert _paths(kuberay.validate_manifest(m)) == ["metadata.name"]


def test_load_manifest_accepts_dict_path_and_text_but_one_document():
    d = _clean()
    assert kuberay.load_manifest(d) == d and kuberay.load_manifest(d) is not d
    path = kuberay.EXAMPLES_DIR / CLEAN
    assert kuberay.load_manifest(path) == d == kuberay.load_manifest(str(path))
    assert kuberay.load_manifest(path.read_text()) == d
    with pytest.raises(ValueError, match="exactly one"):
        kuberay.load_manifest(path.read_text() + "\n---\n" + path.read_text())
    with pytest.raises(ValueError, match="mapping"):
        kuberay.load_manifest("- a\n- b\n")


def test_format_path_quotes_keys_with_dots_and_slashes():
    assert kuberay_schema.format_path(["spec", "workerGroupSpecs", 0, "maxReplicas"]) == \
        "spec.workerGroupSpecs[0].maxReplicas"
    assert kuberay_schema.format_path(["limits", "nvidia.com/gpu"]) == "limits['nvidia.com/gpu']"


def test_operator_problems_catch_what_the_schema_allows():
    m = _clean()
    _worker(m)["minReplicas"] = 7
    _worker(m)["resources"] = {"CPU": "8"}
    _worker(m)["rayStartParams"] = {"num-cpus": "8"}
    m["metadata"]["name"] = "7-sweep"
    assert kuberay.validate_manifest(m) == []  # all of it is schema-valid
    text = " | ".join(str(p) for p in kuberay.operator_problems(m))
    assert "minReplicas 7 is greater than maxReplicas 6" in text
    assert "both in rayStartParams and in resources" in text
    assert "DNS-1035" in text


# ---- reading manifests the way KubeRay does ------------------------------------------------
@pytest.mark.parametrize("text, value", [("500m", 0.5), ("2", 2.0), (3, 3.0), ("1.5", 1.5),
                                         ("8Gi", 8 * 2**30), ("1k", 1000.0), ("1e3", 1000.0),
                                         ("100Mi", 100 * 2**20), ("+2", 2.0)])
def test_parse_quantity(text, value):
    assert kuberay_groups.parse_quantity(text) == pytest.approx(value)


@pytest.mark.parametrize("bad", ["8 cores", "", "Gi", True])
def test_parse_quantity_rejects_non_quantities(bad):
    with pytest.raises(ValueError):
        kuberay_groups.parse_quantity(bad)


def test_pod_ray_resources_follow_kuberay_precedence():
    g = copy.deepcopy(_worker(_clean()))
    assert kuberay_groups.pod_ray_resources(g) == {"CPU": 8.0, "GPU": 1.0}  # from the container limits
    g["rayStartParams"] = {"num-cpus": "6", "num-gpus": "0"}
    assert kuberay_groups.pod_ray_resources(g) == {"CPU": 6.0, "GPU": 0.0}  # rayStartParams win
    g["resources"] = {"CPU": "3", "GPU": "1"}
    assert kuberay_groups.pod_ray_resources(g) == {"CPU": 3.0, "GPU": 1.0}  # the group field wins
    g = copy.deepcopy(_worker(_clean()))
    res = g["template"]["spec"]["containers"][0]["resources"]
    del res["limits"]["cpu"]
    res["requests"]["cpu"] = "1500m"
    assert kuberay_groups.pod_ray_resources(g)["CPU"] == 2.0  # requests when no limit, rounded up
    del res["requests"]["cpu"]
    assert kuberay_groups.pod_ray_resources(g)["CPU"] == 0.0  # declared nowhere


def test_group_readers_and_mounts():
    m = _clean()
    head, [workers] = kuberay_groups.head_group(m), kuberay_groups.worker_groups(m)
    assert head.ray_resources == {"CPU": 3.0, "GPU": 0.0}
    assert head.requests == {"cpu": 3.0, "memory": 12 * 2**30}
    assert workers.requests == {"cpu": 8.0, "memory": 32 * 2**30}
    assert not kuberay_groups.tolerates(head, "nvidia.com/gpu") and kuberay_groups.tolerates(workers, "nvidia.com/gpu")
    assert (workers.name, workers.min_replicas, workers.max_replicas) == ("gpu-workers", 0, 6)
    assert workers.mounts == head.mounts == {"/mnt/results": "persistentVolumeClaim"}
    cluster = kuberay.load_example("raycluster_cpu.yaml")
    assert [(g.name, g.ray_resources["CPU"]) for g in kuberay_groups.worker_groups(cluster)] == \
        [("small", 2.0), ("large", 14.0)]
    pod = _worker(m)["template"]["spec"]
    pod["volumes"].append({"name": "scratch", "emptyDir": {}})
    pod["containers"][0]["volumeMounts"] += [{"name": "scratch", "mountPath": "/scratch"},
                                             {"name": "nowhere", "mountPath": "/x"}]
    assert kuberay_groups.pod_mounts(_worker(m)) == {"/mnt/results": "persistentVolumeClaim",
                                              "/scratch": "emptyDir", "/x": "unknown"}


# ---- the plan vocabulary -------------------------------------------------------------------
def test_finding_codes_are_stable_identifiers():
    assert set(plan_review.FINDING_CODES) == {
        "BUNDLE_TOO_BIG", "MAX_REPLICAS_TOO_LOW", "NO_GPU_GROUP", "POD_LOCAL_STORAGE",
        "DELETED_BEFORE_PERSISTED", "RETRIES_EXCEED_DEADLINE", "NO_DEADLINE", "HEAD_DOES_NOT_FIT"}
    assert all(re.fullmatch(r"[A-Z_]+", c) for c in plan_review.FINDING_CODES)
    f = plan_review.Finding("NO_DEADLINE", "no deadline")
    assert f.code == "NO_DEADLINE" and tuple(f) == ("NO_DEADLINE", "no deadline")


def test_example_plan_uses_real_ray_objects_and_is_fresh_each_time():
    import ray.train
    import ray.tune

    a, b = plan_review.example_plan(), plan_review.example_plan()
    assert isinstance(a.scaling_config, ray.train.ScalingConfig)
    assert isinstance(a.failure_config, ray.train.FailureConfig)
    assert isinstance(a.tune_config, ray.tune.TuneConfig)
    a.rayjob["spec"]["activeDeadlineSeconds"] = 1
    assert b.rayjob["spec"]["activeDeadlineSeconds"] == 14400
    assert kuberay.validate_manifest(a.rayjob) == []
    with pytest.raises(ValueError, match="max_concurrent_trials"):
        plan_review.Plan(rayjob=a.rayjob, scaling_config=a.scaling_config,
                     failure_config=a.failure_config, storage_path="/mnt/results",
                     tune_config=ray.tune.TuneConfig())


def test_default_start_timeout_is_read_from_ray():
    assert plan_review.default_worker_group_start_timeout_s() == 60.0


def test_crd_schema_is_a_copy():
    schema = kuberay_schema.crd_schema("RayJob")
    schema["properties"].clear()
    assert "spec" in kuberay_schema.crd_schema("RayJob")["properties"]
    with pytest.raises(KeyError):
        kuberay_schema.crd_schema("RayJob", "v2")
    assert yaml.safe_dump(kuberay_schema.crd_schema("RayCluster"))  # plain data


def test_pod_requests_default_to_limits_and_count_missing_as_zero():
    g = copy.deepcopy(_worker(_clean()))
    res = g["template"]["spec"]["containers"][0]["resources"]
    res.pop("requests")
    assert kuberay_groups.pod_requests(g) == {"cpu": 8.0, "memory": 32 * 2**30}  # Kubernetes: requests = limits
    res["requests"] = {"cpu": "500m"}
    res.pop("limits")
    assert kuberay_groups.pod_requests(g) == {"cpu": 0.5, "memory": 0.0}


@pytest.mark.parametrize("tolerations, tolerated", [
    ([], False),
    ([{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}], True),
    ([{"key": "nvidia.com/gpu", "operator": "Exists"}], True),  # no effect: every effect
    ([{"operator": "Exists"}], True),  # no key with Exists: every taint
    ([{"key": "other", "operator": "Exists"}], False),
    ([{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}], False),
])
def test_tolerates_matches_key_or_wildcard(tolerations, tolerated):
    g = copy.deepcopy(_worker(_clean()))
    g["template"]["spec"]["tolerations"] = tolerations
    info = kuberay_groups.worker_groups({"kind": "RayCluster", "spec": {"workerGroupSpecs": [g]}})[0]
    assert kuberay_groups.tolerates(info, "nvidia.com/gpu") is tolerated


def test_example_plan_head_fits_its_system_nodes_and_retries_fit_the_deadline():
    from raylab import retry_budget

    plan = plan_review.example_plan()
    head = kuberay_groups.head_group(plan.rayjob)
    system = [n for n in plan.node_groups if not n.taints]
    assert [n.instance_type for n in system] == ["m5.xlarge"]
    # The head must fit what a node offers Pods (allocatable), not the instance size.
    assert head.requests["cpu"] <= system[0].allocatable_cpu < system[0].cpus
    assert head.requests["memory"] <= system[0].allocatable_memory_gib * 2**30
    assert head.ray_resources["CPU"] == plan.tune_config.max_concurrent_trials  # one CPU per trial driver
    worst = retry_budget.worst_case_s(plan.failure_config, start_timeout_s=plan.worker_start_timeout_s,
                                      attempt_s=plan.attempt_s, detection_s=plan.health_check_timeout_s,
                                      preemption_wait_s=plan.preemption_wait_s)
    assert worst == 12720 <= plan.rayjob["spec"]["activeDeadlineSeconds"]


def test_plan_times_default_to_rays_own():
    from raylab import retry_budget

    plan = plan_review.example_plan()
    assert plan.health_check_timeout_s == retry_budget.default_detection_s() == 600.0
    assert plan.preemption_wait_s == retry_budget.default_preemption_wait_s() == 120.0
