"""/healthz, /livez and /readyz as kube-apiserver serves them (apiserver/pkg/server/healthz).

Each endpoint has named checks in registration order. `?verbose` lists them (`[+]ping ok`), `?exclude=NAME`
(repeatable) skips one, `/<endpoint>/<check>` runs one. A failure always answers the verbose form with
500 and withholds the reason, as upstream does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web

# The post-start hooks whose work dramock also does before it serves: admission set up, the informers
# (watch cache) started, the system namespaces created.
_POST_START_HOOKS = [
    "poststarthook/start-apiserver-admission-initializer",
    "poststarthook/generic-apiserver-start-informers",
    "poststarthook/start-system-namespaces-controller",
]


@dataclass
class HealthState:
    """What the checks look at; the server updates it through its lifecycle."""

    started: bool = False  # post-start hooks done
    shutting_down: bool = False
    storage_ok: Callable[[], bool] = lambda: True


def _checks(endpoint: str, state: HealthState) -> list[tuple[str, Callable[[], bool]]]:
    def started() -> bool:
        return state.started

    checks: list[tuple[str, Callable[[], bool]]] = [("ping", lambda: True), ("log", lambda: True),
                                                     ("etcd", state.storage_ok)]
    if endpoint == "readyz":
        checks += [("etcd-readiness", state.storage_ok), ("informer-sync", started)]
    checks += [(name, started) for name in _POST_START_HOOKS]
    if endpoint == "readyz":
        checks.append(("shutdown", lambda: not state.shutting_down))
    return checks


def _text(status: int, body: str) -> web.Response:
    return web.Response(status=status, text=body, content_type="text/plain", charset="utf-8",
                        headers={"X-Content-Type-Options": "nosniff"})


def respond(endpoint: str, rest: list[str], request: web.Request, state: HealthState) -> web.Response:
    checks = _checks(endpoint, state)
    if rest:  # a single check: /readyz/etcd, /livez/poststarthook/...
        name = "/".join(rest)
        for check_name, check in checks:
            if check_name == name:
                return _text(200, "ok") if check() else _text(500, f"internal server error: {name} check failed\n")
        raise web.HTTPNotFound()
    excluded = set(request.query.getall("exclude", []))
    lines, failed = [], False
    for name, check in checks:
        if name in excluded:
            lines.append(f"[+]{name} excluded: ok")
            excluded.discard(name)
            continue
        if check():
            lines.append(f"[+]{name} ok")
        else:
            failed = True
            lines.append(f"[-]{name} failed: reason withheld")
    if excluded:
        unknown = ", ".join(f'"{x}"' for x in sorted(excluded))
        lines.append(f"warn: some health checks cannot be excluded: no matches for {unknown}")
    if failed:
        return _text(500, "\n".join(lines) + f"\n{endpoint} check failed\n")
    if "verbose" not in request.query:
        return _text(200, "ok")
    return _text(200, "\n".join(lines) + f"\n{endpoint} check passed\n")
