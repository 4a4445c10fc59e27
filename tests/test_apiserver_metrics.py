"""The API server's request metrics render as prometheus_client's own Counter and Histogram would."""

import random

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from dramock.apiserver.metrics import DURATION_BUCKETS, REQUEST_LABELS, Metrics


def _without_created(text: bytes) -> list[str]:
    return [line for line in text.decode().splitlines() if "_created" not in line]


def test_request_series_match_prometheus_client_counter_and_histogram():
    rng = random.Random(7)
    ours = Metrics()
    registry = CollectorRegistry()
    total = Counter("apiserver_request_total", "Counter of apiserver requests broken out for each verb, group, "
                    "version, resource, scope, component, and HTTP response code.", [*REQUEST_LABELS, "code"],
                    registry=registry)
    duration = Histogram("apiserver_request_duration_seconds", "Response latency distribution in seconds for each "
                         "verb, group, version, resource, subresource, scope and component.", list(REQUEST_LABELS),
                         buckets=DURATION_BUCKETS, registry=registry)
    label_sets = [("CREATE", "resource.k8s.io", "v1", "resourceclaims", "", "namespace", "apiserver"),
                  ("LIST", "", "v1", "pods", "", "cluster", "apiserver"),
                  ("UPDATE", "", "v1", "pods", "status", "resource", "apiserver")]
    # Bucket bounds themselves (le is inclusive), values between them and beyond the last.
    seconds = [*DURATION_BUCKETS, 0.0, 61.0, 1000.0] + [rng.uniform(0, 70) for _ in range(300)]
    for s in seconds:
        labels, code = rng.choice(label_sets), rng.choice(["200", "201", "409", "422"])
        ours.observe_request(labels, code, s)
        total.labels(*labels, code).inc()
        duration.labels(*labels).observe(s)
    expected = [line for line in _without_created(generate_latest(registry)) if "_sum{" not in line]
    got = _without_created(generate_latest(ours.registry))
    assert [line for line in got if line.startswith("apiserver_request") and "_sum{" not in line] == \
        [line for line in expected if line.startswith("apiserver_request")]
    sums = {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in got if "_sum{" in line}
    assert len(sums) == len(label_sets)
    for labels in label_sets:
        key = "apiserver_request_duration_seconds_sum{" + ",".join(
            f'{k}="{v}"' for k, v in sorted(zip(REQUEST_LABELS, labels, strict=True))) + "}"
        assert abs(sums[key] - duration.labels(*labels)._sum.get()) < 1e-6
