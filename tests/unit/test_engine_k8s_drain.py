"""engine.k8s_drain: k8s_drain's order of work - cordon, then the pods, and the cordon undone when pods refuse the
drain - and what becomes of the engine's refusals and deadlines. The cordon and the drain are stood in for here;
tests/integration/test_k8s_drain.py runs them on the cluster."""

from __future__ import annotations

import pytest

from ansible_collections.kubeops.rotation.plugins.module_utils.engine import k8s_drain as engine
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.drain import PodSelection
from ansible_collections.kubeops.rotation.plugins.module_utils.model.errors import Blocked, Refused, TimedOut
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.cordon import plan_cordon, plan_uncordon
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.filters import judge_all
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.k8s_drain import DrainRequest, filter_options
from builders import node, pod

NOW = "2026-12-03T06:00:00Z"
STRICT = {"force": False, "ignore_daemonsets": False, "delete_emptydir_data": False, "disable_eviction": False}


class Cluster:
    """One node, cordoned or not, and the drain's answer; records the cordons and drains asked for."""

    def __init__(self, monkeypatch, unschedulable=False, answer=None):
        self.node = node("n1", unschedulable=unschedulable, annotations={})
        self.answer = answer or {"changed": False, "pods": []}
        self.calls = []
        monkeypatch.setattr(engine, "apply_cordon", self.apply_cordon)
        monkeypatch.setattr(engine, "drain", self.drain)

    def apply_cordon(self, _client, request, check_mode):
        self.calls.append((request.state, request.force, check_mode))
        change = plan_cordon(self.node, "admin", request.why, NOW, request.taint) if request.state == "cordoned" \
            else plan_uncordon(self.node, request.force)
        if not check_mode:
            self.node["spec"]["unschedulable"] = change.after["unschedulable"]
        return [change]

    def drain(self, _client, job, check_mode):
        self.calls.append(("drain", job.selection, check_mode))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def request(state="drain", pod_selectors=None, **delete_options):
    return DrainRequest.from_params({"name": "n1", "state": state, "pod_selectors": pod_selectors,
                                     "delete_options": dict(STRICT, **delete_options)})


def entries(pods, outcome, **delete_options):
    judged = judge_all(pods, filter_options(dict(STRICT, **delete_options)))
    return [dict(plan.summary(), outcome=outcome if plan.removes else "refused") for plan in judged]


@pytest.mark.parametrize("state, unschedulable, changed, result", [
    ("cordon", False, True, "node n1 marked unschedulable."),
    ("cordon", True, False, "node n1 already marked unschedulable."),
    ("uncordon", True, True, "node n1 marked schedulable."),
    ("uncordon", False, False, "node n1 already marked schedulable."),
])
def test_cordon_and_uncordon_change_only_what_is_not_so_already(monkeypatch, state, unschedulable, changed, result):
    Cluster(monkeypatch, unschedulable=unschedulable)
    answer = engine.set_schedulable("client", request(state), check_mode=False)
    assert answer == {"changed": changed, "result": result}


def test_uncordon_undoes_a_cordon_someone_else_made(monkeypatch):
    cluster = Cluster(monkeypatch, unschedulable=True)
    assert engine.set_schedulable("client", request("uncordon"), check_mode=False)["changed"]
    assert cluster.calls == [("uncordoned", True, False)] and not cluster.node["spec"]["unschedulable"]


def test_check_mode_says_what_would_change_and_changes_nothing(monkeypatch):
    cluster = Cluster(monkeypatch)
    assert engine.set_schedulable("client", request("cordon"), check_mode=True)["changed"]
    assert not cluster.node["spec"]["unschedulable"]


def test_a_drain_cordons_first_then_drains_the_selected_pods_of_the_node(monkeypatch):
    cluster = Cluster(monkeypatch, answer={"changed": True, "pods": entries([pod("web")], "evicted")})
    report = engine.drain_node("client", request(pod_selectors=["app=web"]), check_mode=False)
    selection = PodSelection(nodes=("n1",), pod_selector="app=web")
    assert cluster.calls == [("cordoned", True, False), ("drain", selection, False)]
    assert report["changed"] and report["result"] == "node n1 marked unschedulable. 1 Pod(s) deleted from node."


def test_a_refused_drain_undoes_the_cordon_it_made_and_says_why_in_kubectls_words(monkeypatch):
    refused = {"changed": False, "pods": entries([pod("agent", kind="DaemonSet"), pod("web")], "not attempted")}
    cluster = Cluster(monkeypatch, answer=Refused("Refusing to evict anything", refused))
    with pytest.raises(Refused, match="^Node n1 not drained: cannot delete DaemonSet-managed Pods") as failed:
        engine.drain_node("client", request(), check_mode=False)
    assert cluster.calls[-1] == ("uncordoned", True, False) and not cluster.node["spec"]["unschedulable"]
    assert failed.value.result["changed"] is False and "result" not in failed.value.result
    assert str(failed.value).endswith("the node is left schedulable, as it was.")


def test_a_refused_drain_leaves_a_cordon_it_found_and_check_mode_undoes_nothing(monkeypatch):
    refused = {"pods": entries([pod("debug", kind=None)], "planned")}
    cluster = Cluster(monkeypatch, unschedulable=True, answer=Refused("refused", refused))
    with pytest.raises(Refused, match="left unschedulable, as it was"):
        engine.drain_node("client", request(), check_mode=False)
    assert "uncordoned" not in [call[0] for call in cluster.calls] and cluster.node["spec"]["unschedulable"]
    cluster = Cluster(monkeypatch, answer=Refused("refused", refused))
    with pytest.raises(Refused):
        engine.drain_node("client", request(), check_mode=True)
    assert [call[0] for call in cluster.calls] == ["cordoned", "drain"]


def test_a_wait_that_ran_out_with_pods_only_terminating_warns_as_k8s_drain_does(monkeypatch):
    left = entries([pod("web-1"), pod("web-2")], "evicted")
    left[1]["outcome"] = "terminating"
    Cluster(monkeypatch, answer=TimedOut("Timed out after 30 s evicting", {"changed": True, "pods": left}))
    report = engine.drain_node("client", request(wait_timeout=30), check_mode=False)
    assert report["changed"] and report["result"] == "node n1 marked unschedulable. 2 Pod(s) deleted from node."
    assert report["warnings"] == ["wait_timeout of 30 s ran out while these pods were still terminating: ns/web-2."]


def test_pods_a_pdb_still_holds_at_the_deadline_fail_the_drain_leaving_the_node_unschedulable(monkeypatch):
    left = entries([pod("db-1"), pod("db-2")], "evicted")
    left[1]["outcome"] = "blocked"
    cluster = Cluster(monkeypatch, answer=TimedOut("Timed out after 30 s evicting: ns/db-2 blocked.",
                                                   {"pods": left}))
    with pytest.raises(TimedOut, match=r"^Timed out after 30 s .* Node n1 is left unschedulable\.$") as failed:
        engine.drain_node("client", request(wait_timeout=30), check_mode=False)
    assert failed.value.result["changed"] and cluster.node["spec"]["unschedulable"]


def test_evictions_the_api_server_refused_fail_the_drain_leaving_the_node_unschedulable(monkeypatch):
    failed_pods = entries([pod("web")], "failed")
    Cluster(monkeypatch, answer=Blocked("1 pod(s) could not be evicted: ns/web: forbidden.", {"pods": failed_pods}))
    with pytest.raises(Blocked, match="forbidden. Node n1 is left unschedulable.$") as failed:
        engine.drain_node("client", request(), check_mode=False)
    assert not isinstance(failed.value, Refused) and failed.value.result["changed"]
