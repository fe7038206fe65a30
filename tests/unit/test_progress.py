from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.engine.progress import Progress, ProgressParts
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.progress import (
    counted,
    eviction_line,
    not_ready_text,
    pdb_shortfall,
    why_not_ready,
)
from ansible_collections.kubeops.rotation.plugins.plugin_utils.kubernetes_action import (
    ProgressShown,
    elapsed_text,
    progress_label,
    kubernetes_core_defaults,
)
from builders import pdb, pod

UNSCHEDULABLE = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                 "message": "0/5 nodes are available: 5 node(s) were unschedulable."}


def test_reasons_are_counted_commonest_first_and_the_rest_summed():
    assert counted(["held by PDB a", "held by PDB a", "backing off", "x", "y"]) == \
        "2 held by PDB a; 1 backing off; 1 x; 1 for other reasons"
    assert counted([]) == ""


def test_a_pending_pod_gives_the_schedulers_words_and_a_scheduled_one_its_containers_waiting_reason():
    pending = dict(pod("web-1", node_name=None), status={"conditions": [UNSCHEDULABLE]})
    assert why_not_ready(pending) == "ns/web-1 Pending: 0/5 nodes are available: 5 node(s) were unschedulable."
    assert why_not_ready(dict(pod("web-2", node_name=None), status={})) == "ns/web-2 Pending: not scheduled yet"
    creating = dict(pod("web-3", node_name="n2"), status={"containerStatuses": [
        {"state": {"waiting": {"reason": "ContainerCreating"}}}, {"state": {"running": {}}}]})
    assert why_not_ready(creating) == "ns/web-3 on n2 not Ready (ContainerCreating)"


def test_not_ready_text_names_the_first_pods_and_counts_the_rest():
    pods = [dict(pod("web-%d" % index, node_name=None), status={}) for index in range(5)]
    assert not_ready_text(pods).endswith("ns/web-2 Pending: not scheduled yet and 2 more")


def test_the_eviction_line_says_how_far_and_what_it_waits_for():
    assert eviction_line(3, 10, 2, ["held by PDB ns/web"] * 5) == \
        "evicting: 3 of 10 pods gone, 2 terminating; waiting: 5 held by PDB ns/web"
    assert eviction_line(10, 10, 0, []) == "evicting: 10 of 10 pods gone"


def test_a_line_is_written_whole_and_only_when_it_changes(tmp_path):
    path = tmp_path / "progress"
    progress = Progress(str(path))
    heard = []
    stop = progress.listen(heard.append)
    progress.tell("one")
    progress.tell("one")
    progress.tell("two")
    stop()
    progress.tell("three")
    assert path.read_text() == "three"
    assert heard == ["one", "two"]
    assert not (tmp_path / "progress.partial").exists()


def test_parts_told_by_several_threads_make_one_line():
    progress = Progress()
    parts = ProgressParts("replacing first", progress)
    parts.tell("b", "B: 1 of 2 Ready")
    parts.tell("a", "A: waiting")
    assert progress.line == "replacing first: A: waiting | B: 1 of 2 Ready"
    parts.drop("a")
    parts.tell("b", "B: 2 of 2 Ready")
    assert progress.line == "replacing first: B: 2 of 2 Ready"


def test_kubernetes_core_group_defaults_fill_only_the_connection_options_left_unset():
    defaults = [{"group/kubernetes.core.k8s": {"kubeconfig": "/k", "context": "c1", "wait": True}},
                {"group/k8s": {"context": "c2", "verify_ssl": False}}]
    assert kubernetes_core_defaults(defaults, {}) == {"kubeconfig": "/k", "context": "c2", "verify_ssl": False}
    # validate_certs given under its own name: its alias verify_ssl from the group does not apply.
    assert kubernetes_core_defaults(defaults, {"validate_certs": True, "kubeconfig": "/mine"}) == {"context": "c2"}
    assert kubernetes_core_defaults(None, {}) == {}


def test_progress_is_shown_after_a_quiet_start_on_change_with_a_gap_and_repeated_while_it_waits(tmp_path):
    now = [0.0]
    shown = []
    progress = ProgressShown("localhost | Evict", clock=lambda: now[0], show=shown.append)
    try:
        def at(seconds, line=None):
            now[0] = seconds
            if line is not None:
                with open(progress.path, "w", encoding="utf-8") as handle:
                    handle.write(line)
            progress.poll()

        at(1, "evicting: 0 of 2 pods gone")
        at(4)
        at(6, "evicting: 1 of 2 pods gone")
        at(9, "evicting: 2 of 2 pods gone")
        at(25)
        at(29)
    finally:
        progress.__exit__(None, None, None)
    assert shown == ["localhost | Evict [4s] evicting: 0 of 2 pods gone",
                     "localhost | Evict [9s] evicting: 2 of 2 pods gone",
                     "localhost | Evict [29s] evicting: 2 of 2 pods gone"]
    assert elapsed_text(754) == "12m34s"


def test_a_progress_line_is_led_by_the_role_the_batch_and_the_step_not_by_the_whole_task_name():
    task = ("kubeops.rotation.rotate_nodes : Move: warm the nodes its pods will need, in their zones, replace first "
            "the pods that may not simply be evicted, then evict the rest, batch 2/5")
    assert progress_label("localhost", task) == "rotate_nodes: batch 2/5 move"
    assert progress_label("prod-eu", task) == "prod-eu | rotate_nodes: batch 2/5 move"
    assert progress_label("localhost", "kubeops.rotation.rotate_nodes : Rollback: move the pods off the new nodes") \
        == "rotate_nodes: rollback"
    assert progress_label("localhost", "kubeops.rotation.drain_node : Evict their pods through the Eviction API") == \
        "drain_node: Evict their pods through the Eviction API"
    assert progress_label("localhost", "Drain the node") == "Drain the node"
    assert progress_label("", "x" * 80) == "x" * 59 + "…"


def test_a_pdbs_shortfall_names_its_pods_not_ready_and_those_not_created_yet():
    pods = [pod("web-1"), pod("web-2", node_name="n2", ready=False), pod("web-3", ready=False, deleting=True),
            pod("db-1", app="db", ready=False), pod("web-4", namespace="other", ready=False)]
    assert pdb_shortfall(pdb("web", expected=4), pods) == \
        "ns/web-2 on n2 not Ready; 2 of 4 pods not created yet by their controller"
    assert pdb_shortfall(pdb("web", expected=2), pods) == "ns/web-2 on n2 not Ready"
    assert pdb_shortfall(pdb("web"), [pod("web-1")]) == ""
