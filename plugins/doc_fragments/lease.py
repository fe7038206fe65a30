# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment:
    # The lease option of every module that changes the cluster; its argument
    # spec is LEASE_ARGUMENT_SPEC in module_utils/ansible_module.py.
    DOCUMENTATION = r"""
options:
  lease:
    description:
      - Hold the cluster's Lease (C(coordination.k8s.io/v1)) while this task
        changes anything. It is taken (or renewed) just before the first write and
        renewed every third of O(lease.duration) while the task waits, so that
        a second rotation, rebalance pass or drain is refused at once with a
        message naming the holder. The task does not release it; the run's
        last step does (M(kubeops.rotation.lease) with O(kubeops.rotation.lease#module:state=released)).
      - Without it, the task takes no Lease. Check mode takes no Lease.
    type: dict
    version_added: 0.2.0
    suboptions:
      run_id:
        description:
          - The run that holds the Lease, for example the rotation id. A run
            with the same id takes over its own Lease at once (a rerun after a
            kill); another run only once the Lease expired.
        type: str
        required: true
      holder:
        description: Who holds it, in words (the run id and an AWX job or host); defaults to the run id and this host.
        type: str
      name:
        description: Name of the Lease.
        type: str
        default: kubeops-rotation
      namespace:
        description: Namespace of the Lease; it must exist.
        type: str
        default: kube-system
      duration:
        description:
          - Seconds the Lease holds without a renewal; a run killed with
            SIGKILL leaves a Lease that expires after this long.
        type: int
        default: 300
"""
