"""Every settings class a module hands to an engine builds itself from the module's parameters with
``from_params(params, prefix="")``: it refuses what makes no sense with InvalidInput naming the option (with the
prefix of the option that nests it), gives an option it does not get its own default, and builds the settings it
holds through their own from_params. No cluster: the parameters are plain dicts, as AnsibleModule hands them over."""

from __future__ import annotations

import pytest

from ansible_collections.kubeops.rotation.plugins.module_utils.engine.gates import Gates
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.lease import LeaseSettings
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.phases import PhaseRequest
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.rebalance import RebalanceRequest
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.rollout import RestartSettings
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.rotation_plan import RotationRequest
from ansible_collections.kubeops.rotation.plugins.module_utils.model.errors import InvalidInput
from ansible_collections.kubeops.rotation.plugins.module_utils.model.owners import Workload
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.eviction import EvictionSettings, Limits
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.rebalance.planner import RebalanceSettings
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.rotation import RotationSettings

# The rebalance module's parameters as AnsibleModule hands them over: every option, its default filled in.
REBALANCE = {"strategies": ["topology_spread", "duplicates"], "node_selector": None, "namespaces": None,
             "exclude_namespaces": ["kube-system"], "pod_selector": None, "max_skew": 1, "utilization_deviation": 20,
             "compaction_threshold": 20, "max_evictions": None, "max_per_owner": None, "max_in_flight": None,
             "max_unavailable_per_owner": "1", "steering": "PreferNoSchedule", "timeout": 300,
             "delete_emptydir_data": False, "respect_do_not_disrupt": True, "evict_system_critical": False,
             "reason": "rebalance", "lease": None}


def test_eviction_settings_keep_their_defaults_for_the_options_a_module_does_not_take():
    settings = EvictionSettings.from_params({"timeout": 60, "max_in_flight": 2, "reason": None})
    assert (settings.timeout, settings.wait, settings.wait_for_replacements, settings.grace_period) == (
        60, True, False, None)
    assert settings.limits == Limits(max_in_flight=2) and settings.reason == ""


@pytest.mark.parametrize("params, refused", [
    ({"timeout": 0}, "timeout must be 1 or more, got 0."),
    ({"grace_period": -1}, "grace_period must be 0 or more, got -1."),
    ({"max_in_flight": 0}, "max_in_flight must be 1 or more, got 0."),
    ({"max_per_namespace": 0}, "max_per_namespace must be 1 or more, got 0."),
    ({"max_evictions": -1}, "max_evictions must be 0 or more, got -1."),
    ({"max_unavailable_per_owner": "150%"}, "max_unavailable_per_owner must be a count like 1 or a percent"),
])
def test_eviction_settings_name_the_option_out_of_range(params, refused):
    with pytest.raises(InvalidInput, match=refused.replace(".", r"\.")):
        EvictionSettings.from_params(params)


def test_limits_name_a_nested_option_by_its_prefix():
    with pytest.raises(InvalidInput, match=r"^drain\.max_per_node must be 1 or more"):
        Limits.from_params({"max_per_node": 0}, "drain.")


def test_a_rebalance_pass_waits_for_replacements_and_limits_only_what_the_pass_takes():
    request = RebalanceRequest.from_params(dict(REBALANCE, max_evictions=5, max_in_flight=3))
    assert request.plan.max_evictions == 5, "the plan stops at max_evictions"
    assert request.eviction.limits == Limits(max_in_flight=3, max_unavailable_per_owner="1")
    assert (request.eviction.wait, request.eviction.wait_for_replacements, request.eviction.reason) == (
        True, True, "rebalance")
    assert request.plan.options.exclude_namespaces == ("kube-system",) and request.steering == "PreferNoSchedule"


@pytest.mark.parametrize("changed, refused", [
    ({"strategies": []}, "strategies must name at least one strategy."),
    ({"node_selector": " "}, "node_selector is empty"),
    ({"pod_selector": "a==b==c"}, 'pod_selector "a==b==c" is not a label selector'),
    ({"max_skew": 0}, "max_skew must be 1 or more, got 0."),
    ({"utilization_deviation": 100}, "utilization_deviation must be between 1 and 99, got 100."),
    ({"strategies": ["compaction", "duplicates"]},
     "strategies: compaction packs pods where duplicates spreads them; run them in passes of their own."),
    ({"timeout": 0}, "timeout must be 1 or more, got 0."),
    ({"max_unavailable_per_owner": "0"}, "max_unavailable_per_owner must be a count like 1"),
])
def test_a_rebalance_pass_refuses_what_the_module_refused(changed, refused):
    with pytest.raises(InvalidInput) as raised:
        RebalanceRequest.from_params(dict(REBALANCE, **changed))
    assert str(raised.value).startswith(refused)


def test_rebalance_settings_alone_are_the_planners_defaults():
    assert RebalanceSettings.from_params({}) == RebalanceSettings()


def test_restart_settings_take_the_targets_as_workloads_and_refuse_a_time_that_is_no_rfc_3339():
    settings = RestartSettings.from_params({"targets": [{"kind": "Deployment", "namespace": "shop", "name": "web"}],
                                            "timeout": 60, "avoid_nodes": []})
    assert (settings.targets, settings.timeout, settings.max_concurrent) == (
        (Workload("Deployment", "shop", "web"),), 60, 1)
    with pytest.raises(InvalidInput, match="restarted_after must be an RFC 3339 time"):
        RestartSettings.from_params({"on_nodes": ["n1"], "restarted_after": "yesterday"})


def test_the_lease_names_its_options_by_the_lease_option_and_defaults_its_holder_to_this_run():
    settings = LeaseSettings.from_params({"run_id": "r1", "holder": None, "name": "kubeops-rotation",
                                          "namespace": "kube-system", "duration": 60}, "lease.")
    assert settings.run_id == "r1" and settings.holder.startswith("r1 (host ") and settings.duration == 60
    with pytest.raises(InvalidInput, match=r"^lease\.run_id is empty"):
        LeaseSettings.from_params({"run_id": " ", "duration": 300}, "lease.")
    with pytest.raises(InvalidInput, match=r"^lease\.duration must be 5 seconds or more, got 0\."):
        LeaseSettings.from_params({"run_id": "r1", "duration": 0}, "lease.")


def test_gates_refuse_a_condition_by_the_index_of_its_check():
    params = {"prometheus": None, "alertmanager": None, "http": None, "timeout": 0, "interval": 10, "stage": "now",
              "kubernetes": [{"kind": "Node", "condition": "length(items) >= `1`"},
                             {"kind": "Node", "condition": "length(("}]}
    with pytest.raises(InvalidInput, match=r"^kubernetes\[1\]\.condition: "):
        Gates.from_params(params)
    with pytest.raises(InvalidInput, match="interval must be 1 or more, got 0."):
        Gates.from_params(dict(params, kubernetes=None, interval=0))
    assert not Gates.from_params(dict(params, kubernetes=None)), "no gate to check"


def test_a_rotation_request_holds_the_settings_its_options_make():
    request = RotationRequest.from_params({"nodes": ["n1", "n2"], "target_kubelet_version": "v1.35.0",
                                           "batch_size": "2", "pool_zones": ["zone-a"],
                                           "zone_counts_of": ["shop/Deployment/web"],
                                           "abort_if": {"pending_pods_for": "10m", "pdb_blocked_for": None}})
    settings = request.settings
    assert request.nodes == ("n1", "n2") and request.retire == "delete"
    assert (settings.rules.target_kubelet_version, settings.batch_size, settings.pool_zones) == (
        "v1.35.0", "2", ("zone-a",))
    assert settings.zone_counts_of == (Workload("Deployment", "shop", "web"),)
    assert settings.abort_if.pending_pods_for == "10m" and settings.options.respect_do_not_disrupt


def test_rotation_settings_refuse_with_the_rotation_plan_rules_and_the_prefix():
    with pytest.raises(InvalidInput, match=r"^rotation\.batch_size must be a count like 1"):
        RotationSettings.from_params({"nodes": ["n1"], "batch_size": "0"}, "rotation.")


def test_a_phase_request_records_on_the_lease_it_is_given_and_refuses_a_rollback_that_retires():
    params = {"nodes": ["node-1"], "rotation_id": "r1", "phase": "retired", "delete": True, "timeout": 60,
              "delete_node_without_owner": True, "keep": None, "wait": True,
              "lease": {"run_id": "r1", "holder": "r1", "name": "kubeops-rotation", "namespace": "ops",
                        "duration": 60}}
    request = PhaseRequest.from_params(params)
    assert request.names == ("node-1",) and request.delete and request.lease.namespace == "ops"
    assert PhaseRequest.from_params(dict(params, lease=None)).lease is None
    with pytest.raises(InvalidInput, match=r"^phase rolled-back takes neither delete nor keep"):
        PhaseRequest.from_params(dict(params, phase="rolled-back"))
    with pytest.raises(InvalidInput, match=r"^timeout must be 1 or more"):
        PhaseRequest.from_params(dict(params, timeout=0))
