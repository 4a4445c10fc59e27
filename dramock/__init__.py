"""dramock: a Kubernetes 1.37 API server for Dynamic Resource Allocation."""

__version__ = "0.1.0"

# The Kubernetes release dramock emulates at the wire.
KUBERNETES_VERSION = "v1.37.0"
