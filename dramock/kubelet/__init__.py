"""The kubelet shim: node registration and lease, DRA kubelet-plugin registration and gRPC, pod lifecycle.

Entry points: `run_kubelet(server, KubeletConfig(...))`, `python -m dramock.kubelet ...`
(flags: `dramock.kubelet.__main__.add_kubelet_flags`).
"""

from dramock.kubelet.kubelet import Kubelet, KubeletConfig, run_kubelet
from dramock.kubelet.node import NodeConfig

__all__ = ["Kubelet", "KubeletConfig", "NodeConfig", "run_kubelet"]
