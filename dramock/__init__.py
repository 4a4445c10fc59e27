"""dramock: a Kubernetes 1.37 API server for Dynamic Resource Allocation."""

__version__ = "0.1.0"

# The Kubernetes release dramock emulates at the wire.
KUBERNETES_VERSION = "v1.37.0"


def configure_logging(verbosity: int) -> None:
    """Every command's log format; -v 4 or more (klog's debug level) shows debug lines."""
    import logging

    logging.basicConfig(level=logging.DEBUG if verbosity >= 4 else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
