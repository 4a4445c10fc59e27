"""dramock's own read-only paths beside the Kubernetes API (not in discovery, not a Kubernetes group):

  GET /dramock/explain/namespaces/NS/pods/NAME   the PodExplanation of one pod (dramock.scheduler.explain);
                                                 ?format=text gives what `dramock explain` prints (&verbose=true)
  GET /dramock/explain/namespaces/NS/pods        a PodExplanationList of the namespace's pending pods
  GET /dramock/explain/pods                      the same for every namespace (what the device map shows)
  GET /ui/...                                    the device map: static files shipped in dramock/ui/
"""

from __future__ import annotations

import mimetypes
from importlib import resources
from typing import Any

from aiohttp import web

from dramock import errors
from dramock.apiserver import codec
from dramock.scheduler import explain
from dramock.scheduler.snapshot import from_store
from dramock.schemas.featuregates import FeatureGates

UI_PACKAGE = "dramock.ui"


def handle_explain(store: Any, gates: FeatureGates, parts: list[str], query: Any) -> web.Response:
    """`parts` is the path after /dramock/explain."""
    if parts[:1] == ["pods"] and len(parts) == 1:
        namespace, name = None, None
    elif len(parts) in (3, 4) and parts[0] == "namespaces" and parts[2] == "pods":
        namespace, name = parts[1], (parts[3] if len(parts) == 4 else None)
    else:
        raise errors.path_not_found()
    snap = from_store(store)
    if name is None:
        items = [explain.explain_pod(snap, p["metadata"].get("namespace", ""), p["metadata"]["name"], gates)
                 for p in snap.pods if explain.wanted(p)
                 and (namespace is None or p["metadata"].get("namespace") == namespace)]
        return web.Response(text=codec.dumps({"kind": "PodExplanationList", "apiVersion": explain.API_VERSION,
                                              "items": items}), content_type="application/json")
    try:
        expl = explain.explain_pod(snap, namespace or "", name, gates)
    except KeyError:
        raise errors.not_found("pods", "", name) from None
    if query.get("format", "json") == "text":
        verbose = (query.get("verbose") or "").lower() in ("1", "true")
        return web.Response(text=explain.render(expl, verbose), content_type="text/plain")
    if query.get("format", "json") != "json":
        raise errors.bad_request(f'format: Unsupported value: "{query.get("format")}": supported values: '
                                 '"json", "text"')
    return web.Response(text=codec.dumps(expl), content_type="application/json")


def handle_ui(parts: list[str]) -> web.StreamResponse:
    """`parts` is the path after /ui; "" is index.html. Only files shipped in the package are served."""
    name = "/".join(parts) or "index.html"
    if any(p in ("", ".", "..") or p.startswith(".") for p in name.split("/")):
        raise errors.path_not_found()
    item = resources.files(UI_PACKAGE).joinpath(name)
    if not item.is_file():
        raise errors.path_not_found()
    ctype = mimetypes.guess_type(name)[0] or "application/octet-stream"
    return web.Response(body=item.read_bytes(), content_type=ctype, headers={"Cache-Control": "no-cache"})
