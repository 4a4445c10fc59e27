"""What the scheduling.k8s.io kinds share: their group and their 1.37 definitions."""

GROUP = "scheduling.k8s.io"
DEFS = "io.k8s.api.scheduling.v1beta1."
