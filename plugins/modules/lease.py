#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: lease
short_description: Take, renew or release the cluster's Lease, so that one rotation, rebalance or drain runs at a time
version_added: 0.2.0
description:
  - One C(coordination.k8s.io/v1) Lease per cluster says which run may change
    it. O(state=held) takes it when nobody holds it, renews it when this run
    (O(run_id)) holds it, takes it over when its holder stopped renewing (a
    run killed with SIGKILL leaves a Lease that expires by itself after
    O(duration) seconds), and otherwise fails at once with one line naming
    the holder, since when it holds the Lease and until when.
  - A run with the same O(run_id) takes over its own Lease at once, so that
    a rerun after a kill (an AWX relaunch, a pipeline retry) continues.
  - O(state=released) lets go of the Lease if this run holds it.
  - The modules that change the cluster take an option O(kubeops.rotation.evict#module:lease)
    that renews the Lease while they wait.
  - Check mode takes, renews and releases nothing; it says what would
    happen, and warns instead of failing when another run holds the Lease.
  - With O(hold_seconds), the module holds the Lease that long before it returns, renewing it and saying
    on the Lease's progress line what it waits for (O(hold_reason)) - a soak between batches that keeps every
    other run out however long it lasts.
extends_documentation_fragment:
  - kubeops.rotation.connection
seealso:
  - module: kubeops.rotation.cordon
    description: Takes the Lease with its O(kubeops.rotation.cordon#module:lease) option before it cordons.
  - module: kubeops.rotation.evict
    description: Takes and renews the Lease with its O(kubeops.rotation.evict#module:lease) option while it drains.
  - module: kubeops.rotation.rebalance
    description: A rebalance pass, which the C(rebalance) role runs under the Lease.
  - module: kubeops.rotation.rotation_state
    description: Records a rotation's phases; the C(rotate_nodes) role holds the Lease for the whole rotation.
options:
  run_id:
    description: The run, for example a rotation id.
    type: str
    required: true
  holder:
    description: Who holds the Lease, in words; defaults to the run id, this host and process.
    type: str
  state:
    description: V(held) to take or renew the Lease, V(released) to let go of it.
    type: str
    choices: [held, released]
    default: held
  name:
    description: Name of the Lease.
    type: str
    default: kubeops-rotation
  namespace:
    description: Namespace of the Lease; it must exist.
    type: str
    default: kube-system
  duration:
    description: Seconds the Lease holds without a renewal.
    type: int
    default: 300
  hold_seconds:
    description:
      - With O(state=held), hold the Lease this many seconds more, renewing it, before returning. V(0) returns
        at once. Check mode does not wait.
    type: int
    default: 0
    version_added: 0.3.0
  hold_reason:
    description: What the run waits for while it holds the Lease (O(hold_seconds)), for the progress line.
    type: str
    default: holding the Lease
    version_added: 0.3.0
attributes:
  check_mode:
    support: full
    description: Says what would happen; writes nothing.
  diff_mode:
    support: full
    description: The Lease's holder and run id before and after.
author:
  - kubeops.rotation developers (@kubeops)
"""

EXAMPLES = r"""
- name: Hold the cluster for this rotation (a second rotation is refused until it is released or expires)
  kubeops.rotation.lease:
    run_id: "{{ rotation_id }}"
    holder: "{{ rotation_id }} (AWX job {{ awx_job_id | default('-') }})"
    duration: 600

- name: Soak ten minutes after a batch, the cluster held meanwhile
  kubeops.rotation.lease:
    run_id: "{{ rotation_id }}"
    hold_seconds: 600
    hold_reason: soak after batch 1/4

- name: Let go of it at the end
  kubeops.rotation.lease:
    run_id: "{{ rotation_id }}"
    state: released
"""

RETURN = r"""
action:
  description: >-
    V(create), V(acquire) (nobody held it), V(renew) (this run held it), V(take over) (its holder did not
    renew in time), V(released), V(not held) (release of a Lease this run does not hold), or V(refuse) in
    check mode when another run holds it.
  returned: always
  type: str
  sample: acquire
reason:
  description: Why, in words.
  returned: always
  type: str
  sample: the last holder released it
lease:
  description: The Lease as read or written; empty when there is none.
  returned: always
  type: dict
  contains:
    name:
      description: Name of the Lease.
      type: str
      sample: kubeops-rotation
    namespace:
      description: Namespace of the Lease.
      type: str
      sample: kube-system
    holder:
      description: Its C(holderIdentity), or null once released.
      type: str
      sample: ami-2026-12 (host runner-1, pid 4242)
    run_id:
      description: The run id recorded on the Lease.
      type: str
      sample: ami-2026-12
    acquired:
      description: Its C(acquireTime).
      type: str
      sample: "2026-12-03T10:15:02.123456Z"
    renewed:
      description: Its C(renewTime).
      type: str
      sample: "2026-12-03T10:20:02.654321Z"
    expires:
      description: When it expires unless renewed, or null when nobody holds it.
      type: str
      sample: "2026-12-03T10:25:02.654321Z"
    duration_seconds:
      description: Its C(leaseDurationSeconds).
      type: int
      sample: 300
diff:
  description: The Lease's holder and run id before and after.
  returned: when diff mode is on
  type: dict
  sample: {"before": {"holder": null, "run_id": null},
           "after": {"holder": "ami-2026-12 (host runner-1, pid 4711)", "run_id": "ami-2026-12"}}
  version_added: 0.3.0
held_seconds:
  description: How long the Lease was held before the module returned (O(hold_seconds)).
  returned: when O(hold_seconds) is more than 0, not in check mode
  type: float
  sample: 600.2
  version_added: 0.3.0
api_requests:
  description: Number of HTTP requests made to the API server.
  returned: always
  type: int
  sample: 2
api_retries:
  description:
    - Requests sent again after a transient fault (C(requests)), and the writes among all requests whose answer
      was lost on the way back (C(lost_answers)) - each either sent again when a repeat finds it done (a patch,
      a delete, a create), or read first (an eviction), so that nothing is done twice.
  returned: always
  type: dict
  sample: {"requests": 3, "lost_answers": 1}
  version_added: 0.3.0
"""

from ansible_collections.kubeops.rotation.plugins.module_utils.ansible_module import (
    LEASE_OPTIONS,
    kubernetes_module,
    run_module,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.lease import LeaseKeeper, LeaseSettings, hold_for
from ansible_collections.kubeops.rotation.plugins.module_utils.model.errors import Blocked, InvalidInput
from ansible_collections.kubeops.rotation.plugins.module_utils.model.inputs import number_error


def holder_of(described):
    return {"holder": described.get("holder"), "run_id": described.get("run_id")}


def main():
    module = kubernetes_module(dict(LEASE_OPTIONS,
                                    state=dict(type="str", choices=["held", "released"], default="held"),
                                    hold_seconds=dict(type="int", default=0),
                                    hold_reason=dict(type="str", default="holding the Lease")))

    def settings(params):
        error = number_error("hold_seconds", params["hold_seconds"], 0)
        if error:
            raise InvalidInput(error)
        # Named as the lease option of the other modules names them.
        return LeaseSettings.from_params(params, "lease.")

    def hold(client, settings, check_mode):
        keeper = LeaseKeeper(client, settings)
        before = holder_of(keeper.describe(keeper.read())) if module._diff else None
        if module.params["state"] == "released":
            released = keeper.release(check_mode)
            after = {"holder": None, "run_id": before and before["run_id"]} if released else before
            return dict(changed=released, action="released" if released else "not held",
                        reason="this run held it" if released else "this run does not hold it",
                        lease=keeper.describe(keeper.read()), diff={"before": before, "after": after})
        try:
            taken = keeper.take(check_mode)
        except Blocked as exc:
            if not check_mode:
                raise
            return dict(changed=False, action="refuse", reason=str(exc), lease=exc.result["lease"], warnings=[str(exc)],
                        diff={"before": before, "after": before})
        result = dict(taken, changed=True, diff={"before": before,
                                                 "after": {"holder": settings.holder, "run_id": settings.run_id}})
        if module.params["hold_seconds"] > 0 and not check_mode:
            result["held_seconds"] = hold_for(keeper, module.params["hold_seconds"], module.params["hold_reason"])
        return result

    run_module(module, hold, settings)


if __name__ == "__main__":
    main()
