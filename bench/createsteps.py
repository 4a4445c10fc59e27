"""CPU per create of the request-body steps inside the API server, called directly (no HTTP): decoding and
type-checking the body (codec.decode_object), defaulting, dropping disabled-gate fields (prepare_for_create)
and validation (strategy.validate), in µs per call, for a few realistic bodies.

    python bench/createsteps.py [--seconds 0.5]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from apiserver import claim  # noqa: E402
from schedobjects import claim_template, partitionable_slices, pod, resource_slice  # noqa: E402

from dramock.apiserver import codec  # noqa: E402
from dramock.registry.registry import Registry  # noqa: E402


def bodies() -> dict[str, tuple[str, dict]]:
    return {"ResourceClaim (bench)": ("resourceclaims", claim("c-1")),
            "ResourceClaimTemplate": ("resourceclaimtemplates", claim_template(True)),
            "Pod": ("pods", pod("p-1")),
            "ResourceSlice (8 devices)": ("resourceslices", resource_slice("node-1", 8)),
            "ResourceSlice (partitionable)": ("resourceslices", partitionable_slices(1)[1])}


def per_call(fn, seconds: float) -> float:
    """µs per call: the best of 5 rounds of CPU time."""
    n, t = 1, 0.0
    while t < seconds / 5:
        start = time.process_time()
        for _ in range(n):
            fn()
        t = time.process_time() - start
        n *= 2
    n //= 2
    best = float("inf")
    for _ in range(5):
        start = time.process_time()
        for _ in range(n):
            fn()
        best = min(best, (time.process_time() - start) / n)
    return best * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=0.5)
    args = ap.parse_args()
    registry = Registry.default()
    print(f"{'body':32} {'decode':>8} {'default':>8} {'prepare':>8} {'validate':>9}  (µs per call, CPU)")
    for label, (plural, obj) in bodies().items():
        print(f"{label:32} " + " ".join(f"{t:8.1f}" for t in measure(registry, plural, obj, args.seconds)))


def measure(registry: Registry, plural: str, obj: dict, seconds: float) -> list[float]:
    group, _, version = obj["apiVersion"].rpartition("/")
    kind = registry.lookup(group, version, plural)
    assert kind is not None, plural
    strategy = registry.strategy(kind)
    body = json.dumps(obj).encode()
    decoded = codec.decode_object(body, "application/json", kind, "Strict").obj
    decoded["metadata"].update(uid="5f0e2a43-3e1b-4b9c-9d0e-6a3c0c6c2f10", creationTimestamp="2026-01-01T00:00:00Z")
    if kind.namespaced:
        decoded["metadata"]["namespace"] = "default"
    strategy.default(decoded)
    prepared = copy.deepcopy(decoded)
    strategy.prepare_for_create(prepared)
    assert strategy.validate(prepared) == [], strategy.validate(prepared)

    def prepare() -> None:  # on the same object again: what it drops is gone, but every test runs
        prepared["metadata"].pop("generation", None)
        strategy.prepare_for_create(prepared)

    return [per_call(lambda: codec.decode_object(body, "application/json", kind, "Strict"), seconds),
            per_call(lambda: strategy.default(prepared), seconds),
            per_call(prepare, seconds),
            per_call(lambda: strategy.validate(prepared), seconds)]

if __name__ == "__main__":
    main()
