"""What every benchmark holds: the clients on its cluster and a folder for the tools' files."""

from __future__ import annotations

from clients import ClusterClients


class ClusterBench(ClusterClients):
    def __init__(self, kubeconfig, work_dir):
        super().__init__(kubeconfig)
        self.work_dir = work_dir
