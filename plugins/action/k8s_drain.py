# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The action of kubeops.rotation.k8s_drain: see plugin_utils.kubernetes_action."""

from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.plugin_utils.kubernetes_action import KubernetesAction


class ActionModule(KubernetesAction):
    pass
