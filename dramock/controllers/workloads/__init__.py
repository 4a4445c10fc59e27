"""Workload controllers of kube-controller-manager (apps/v1 and batch/v1), API clients over HTTP like the rest:
Deployment (through ReplicaSets), ReplicaSet, DaemonSet, StatefulSet and Job. Their pods carry controller
ownerReferences, so the garbage collector cascades deletions; pods that ask for claims from templates get them
from the ResourceClaim controller, as any pod does."""
