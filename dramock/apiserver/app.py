"""The aiohttp application: routing, content negotiation, errors as Status, metrics, health, discovery."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

from dramock import errors
from dramock.admission import strategy as strategies
from dramock.admission.chain import SYSTEM_NAMESPACES, Admission
from dramock.apiserver import codec, discovery, health, openapi, params
from dramock.apiserver.rest import Call, Rest, Result, meta, now_rfc3339, stamp_resource_version
from dramock.apiserver.watch import WatchHandler
from dramock.jsonvalue import clone
from dramock.schemas import printers, registry, versions
from dramock.schemas.featuregates import FeatureGates
from dramock.schemas.registry import Kind
from dramock.storage.revlog import DEFAULT_HISTORY, RevisionLog, StaleRead, StorageFailure, sqlite_url

log = logging.getLogger("dramock.apiserver")

# Attempts at a write whose object another API server replica keeps changing under it (shared database).
_STALE_RETRIES = 16

Obj = dict[str, Any]


@dataclass
class ServerConfig:
    data_dir: str = "./dramock-data"
    database_url: str = ""  # default: SQLite file in data_dir
    feature_gates: dict[str, bool] = field(default_factory=dict)
    # Like kube-apiserver's --etcd-compaction-interval: history older than one interval is compacted.
    compaction_interval: float = 300.0
    bookmark_interval: float = 10.0
    # Events kept for watches (and replayed at start-up); older resourceVersions answer 410 Gone.
    watch_history: int = DEFAULT_HISTORY

    @property
    def url(self) -> str:
        return self.database_url or sqlite_url(self.data_dir)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter("apiserver_request_total", "Counter of apiserver requests broken out for each "
                                "verb, group, version, resource, scope, component, and HTTP response code.",
                                ["verb", "group", "version", "resource", "subresource", "scope", "component",
                                 "code"], registry=self.registry)
        self.duration = Histogram("apiserver_request_duration_seconds", "Response latency distribution in "
                                  "seconds for each verb, group, version, resource, subresource, scope and "
                                  "component.", ["verb", "group", "version", "resource", "subresource", "scope",
                                                 "component"],
                                  buckets=(0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3,
                                           4, 5, 6, 8, 10, 15, 20, 30, 45, 60),
                                  registry=self.registry)
        self.objects = Gauge("apiserver_storage_objects", "Number of stored objects at the time of last check "
                             "split by kind.", ["resource"], registry=self.registry)
        self.watchers = Gauge("apiserver_registered_watchers", "Number of currently registered watchers for a "
                              "given resources", ["group", "version", "kind"], registry=self.registry)
        self.longrunning = Gauge("apiserver_longrunning_requests", "Gauge of all active long-running apiserver "
                                 "requests broken out by verb, group, version, resource, scope and component.",
                                 ["verb", "group", "version", "resource", "subresource", "scope", "component"],
                                 registry=self.registry)

    def on_watchers(self, kind: Kind, delta: int) -> None:
        self.watchers.labels(kind.group, kind.version, kind.kind).inc(delta)


@dataclass
class Route:
    """Where a request points once its path is parsed."""

    verb: str
    kind: Kind | None = None
    namespace: str | None = None
    name: str | None = None
    subresource: str = ""


class APIServer:
    def __init__(self, config: ServerConfig):
        self.config = config
        self.store = RevisionLog(config.url, stamp_resource_version, history=config.watch_history)
        strategies.configure(FeatureGates(config.feature_gates), self._namespace_labels)
        self.admission = Admission(self.store)
        self.rest = Rest(self.store, self.admission)
        self.metrics = Metrics()
        self.watch = WatchHandler(self.store, config.bookmark_interval, self.metrics.on_watchers)
        self.health = health.HealthState()
        self._compactor: asyncio.Task | None = None

    def _namespace_labels(self, name: str) -> dict[str, str] | None:
        ns = self.store.get("namespaces", name)
        return (ns.get("metadata") or {}).get("labels") if ns else None

    # ---------------------------------------------------------------- lifecycle

    def app(self) -> web.Application:
        # Bodies are size-checked by us (413 as a Status); aiohttp's own limit sits just above.
        app = web.Application(client_max_size=codec.MAX_BODY + 1024 * 1024, middlewares=[self._middleware])
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        app.on_startup.append(self._on_startup)
        app.on_shutdown.append(self._on_shutdown)
        app.on_cleanup.append(self._on_cleanup)
        return app

    async def _on_startup(self, _app: web.Application) -> None:
        self._seed_namespaces()
        self._compactor = asyncio.create_task(self.store.run(self.config.compaction_interval))
        self.health.started = True

    async def _on_shutdown(self, _app: web.Application) -> None:
        self.health.shutting_down = True
        self.watch.close_all()

    async def _on_cleanup(self, _app: web.Application) -> None:
        if self._compactor:
            self._compactor.cancel()
        self.store.close()

    def _seed_namespaces(self) -> None:
        kind = registry.lookup("", "v1", "namespaces")
        assert kind is not None
        for ns in SYSTEM_NAMESPACES:
            if self.store.get("namespaces", ns) is None:
                call = Call(kind, None, None, "", _EMPTY_QUERY, user_agent="kube-apiserver")
                try:
                    self.rest.create_object(call, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
                except errors.APIError as e:  # another replica on the same database created it first
                    if e.code != 409:
                        raise

    # ---------------------------------------------------------------- HTTP

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        start = time.perf_counter()
        request["route"] = None
        try:
            resp = await handler(request)
        except errors.APIError as e:
            resp = self._status_response(e)
        except web.HTTPRequestEntityTooLarge:
            resp = self._status_response(errors.request_entity_too_large(codec.MAX_BODY))
        except web.HTTPException:
            raise
        except StorageFailure as e:  # the SQL detail is in the log (revlog), never in the answer
            log.error("storage failed serving %s %s", request.method, request.path)
            resp = self._status_response(errors.internal(str(e)))
        except Exception as e:  # never a traceback to the client
            log.exception("internal error serving %s %s", request.method, request.path)
            resp = self._status_response(errors.internal(type(e).__name__ + ": " + str(e)))
        route: Route | None = request["route"]
        if route is not None and route.kind is not None:
            k = route.kind
            labels = (route.verb.upper() if route.verb != "watch" else "WATCH", k.group, k.version, k.plural,
                      route.subresource, _scope(route), "apiserver")
            self.metrics.requests.labels(*labels, str(resp.status)).inc()
            self.metrics.duration.labels(*labels[:-1], labels[-1]).observe(time.perf_counter() - start)
        log.debug("%s %s %s %d %.1fms", request.method, request.path_qs, request.headers.get("User-Agent", ""),
                  resp.status, (time.perf_counter() - start) * 1000)
        return resp

    def _status_response(self, e: errors.APIError) -> web.Response:
        return web.Response(status=e.code, text=codec.dumps(e.status()), content_type="application/json")

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        path = request.path.rstrip("/") or "/"
        parts = [p for p in path.split("/") if p]
        if not parts:
            return _json({"paths": sorted(["/api", "/api/v1", "/apis", "/healthz", "/livez", "/readyz", "/metrics",
                                           "/openapi/v2", "/openapi/v3", "/version"])})
        head = parts[0]
        if head in ("healthz", "livez", "readyz"):
            return health.respond(head, parts[1:], request, self.health)
        if head == "version" and len(parts) == 1:
            return _json(discovery.version_info())
        if head == "metrics" and len(parts) == 1:
            for k in registry.KINDS:
                self.metrics.objects.labels(k.group_resource).set(self.store.count(k.storage_bucket))
            # The process-wide registry adds process metrics and, under `serve`, the in-process components'
            # (e.g. dynamic_resource_allocation_resource_claims from the ResourceClaim controller).
            return web.Response(body=generate_latest(self.metrics.registry) + generate_latest(REGISTRY),
                                headers={"Content-Type": CONTENT_TYPE_LATEST})
        if head == "openapi":
            return self._openapi(request, parts)
        if head == "api":
            if len(parts) == 1:
                return self._discovery(request, core=True)
            if parts[1] != "v1":
                raise errors.path_not_found()
            return await self._resource_request(request, "", "v1", parts[2:])
        if head == "apis":
            if len(parts) == 1:
                return self._discovery(request, core=False)
            group = parts[1]
            if group not in registry.groups():
                raise errors.path_not_found()
            if len(parts) == 2:
                return _json(discovery.group(group) or {})
            if parts[2] not in registry.versions_of(group):
                raise errors.path_not_found()
            return await self._resource_request(request, group, parts[2], parts[3:])
        raise errors.path_not_found()

    def _discovery(self, request: web.Request, core: bool) -> web.Response:
        if discovery.wants_aggregated(request.headers.get("Accept", "")):
            body, etag = discovery.aggregated_bytes(core)
            return web.Response(body=body, headers={"Content-Type": discovery.AGGREGATED_V2, "ETag": etag,
                                                    "Vary": "Accept"})
        return _json(discovery.core_versions() if core else discovery.group_list(), vary=True)

    def _openapi(self, request: web.Request, parts: list[str]) -> web.Response:
        if parts[1:] == ["v2"]:
            status, headers, body = openapi.v2_response(request.headers.get("Accept", ""),
                                                        request.headers.get("If-None-Match"))
            return web.Response(status=status, headers=headers, body=body)
        if parts[1:] == ["v3"]:
            body, etag = openapi.v3_index_bytes()
            if request.headers.get("If-None-Match") == etag:
                return web.Response(status=304, headers={"ETag": etag})
            return web.Response(body=body, headers={"Content-Type": "application/json", "ETag": etag})
        if len(parts) > 2 and parts[1] == "v3":
            status, headers, body = openapi.v3_response("/".join(parts[2:]), request.query.get("hash"))
            return web.Response(status=status, headers=headers, body=body)
        raise errors.path_not_found()

    # ---------------------------------------------------------------- resources

    async def _resource_request(self, request: web.Request, group: str, version: str,
                                rest: list[str]) -> web.StreamResponse:
        if not rest:
            return _json(discovery.resource_list(group, version) or {})
        watch_prefix = rest[0] == "watch"
        if watch_prefix:  # the deprecated /watch/ path form
            rest = rest[1:]
        route = self._route(request.method, group, version, rest, request.query)
        if watch_prefix:
            if route.verb not in ("list", "get"):
                raise errors.method_not_allowed(route.verb, route.kind.plural if route.kind else "", group)
            route.verb = "watch"
        request["route"] = route
        kind = route.kind
        assert kind is not None
        call = Call(kind, route.namespace, route.name, route.subresource, request.query,
                    user_agent=request.headers.get("User-Agent", ""), verb=route.verb)
        if kind.group == versions.GROUP and (deprecated := versions.deprecation_warning(kind.version, kind.kind)):
            call.warnings.append(deprecated)
        accept = codec.negotiate(request.headers.get("Accept"))
        if route.verb == "watch":
            return await self.watch.serve(request, call, accept, self._table_for_watch(call))
        body = b""
        if request.method in ("POST", "PUT", "PATCH", "DELETE"):
            if request.content_length is not None and request.content_length > codec.MAX_BODY:
                raise errors.request_entity_too_large(codec.MAX_BODY)
            body = await request.read()
            if len(body) > codec.MAX_BODY:
                raise errors.request_entity_too_large(codec.MAX_BODY)
            # API server replicas on one database: see every committed write before checking preconditions.
            self.store.catch_up()
        elif route.verb in ("get", "list") and not call.param("resourceVersion"):
            self.store.catch_up()  # a consistent read (resourceVersion unset) includes every committed write
        content_type = request.headers.get("Content-Type", "")
        warnings = len(call.warnings)
        for attempt in range(_STALE_RETRIES):
            try:
                result = self._verb(call, route.verb, body, content_type)
                break
            except StaleRead:
                # Another replica wrote the object after this one last followed the log: catch up, do it again.
                # A write still in flight on some replica can hold the log back: give it a moment to commit.
                del call.warnings[warnings:]
                if attempt:
                    await asyncio.sleep(min(0.005 * 2 ** attempt, 0.2))
                self.store.catch_up()
        else:
            raise errors.conflict(kind.plural, kind.group, call.name or "", errors.STALE_OBJECT)
        return self._respond(call, accept, result)

    def _verb(self, call: Call, verb: str, body: bytes, content_type: str) -> Result:
        if verb == "get":
            return self.rest.get(call)
        if verb == "list":
            return self.rest.list(call)
        if verb == "create":
            return self._create(call, body, content_type)
        if verb == "update":
            return self.rest.update(call, body, content_type)
        if verb == "patch":
            return self.rest.patch(call, body, content_type)
        if verb == "delete":
            return self.rest.delete(call, body, content_type)
        if verb == "deletecollection":
            return self.rest.delete_collection(call, body, content_type)
        raise errors.method_not_allowed(verb, call.kind.plural, call.kind.group)

    def _create(self, call: Call, body: bytes, content_type: str) -> Result:
        if call.subresource == "binding":
            return self._bind(call, body, content_type)
        return self.rest.create(call, body, content_type)

    def _bind(self, call: Call, body: bytes, content_type: str) -> Result:
        """pods/binding: set spec.nodeName of an unbound pod (what the scheduler calls)."""
        doc, _ = codec.parse_document(body, content_type or codec.JSON) if codec.media_type(content_type) != \
            codec.PROTOBUF else (_decode_protobuf(body), [])
        if not isinstance(doc, dict):
            raise errors.bad_request("binding body must be an object")
        target = (doc.get("target") or {}).get("name")
        name = (doc.get("metadata") or {}).get("name") or call.name
        if not target:
            raise errors.invalid("Binding", "", name or "", [{"reason": "FieldValueRequired",
                                                             "message": "Required value", "field": "target.name"}])
        pods = call.kind
        pod_call = Call(pods, call.namespace, name, "", call.query, call.user_agent)
        current = self.rest.get(pod_call).body
        if (current.get("spec") or {}).get("nodeName"):
            raise errors.conflict("pods", "", name or "", f"pod {name} is already assigned to node "
                                  f"\"{current['spec']['nodeName']}\"")
        if current["metadata"].get("deletionTimestamp"):
            raise errors.conflict("pods", "", name or "", f"pod {name} is being deleted, cannot be assigned "
                                  "to a host")
        pod = clone(current)
        pod["spec"]["nodeName"] = target
        conditions = [c for c in (pod.get("status") or {}).get("conditions") or [] if c.get("type") != "PodScheduled"]
        conditions.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                           "lastTransitionTime": now_rfc3339()})
        pod.setdefault("status", {})["conditions"] = conditions
        # Binding bypasses the spec-immutability of updates, as upstream's BindingREST does.
        stored = self.rest.store.update(pods.storage_bucket, f"{call.namespace}/{name}", pod)
        del stored
        return Result({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}, 201)

    def _table_for_watch(self, call: Call) -> Any:
        def render(kind: Kind, objs: list[Obj], with_columns: bool) -> Obj:
            return printers.table(kind, objs, include_object=self._include_object(call),
                                  no_headers=not with_columns)
        return render

    @staticmethod
    def _include_object(call: Call) -> str:
        value = call.param("includeObject") or "Metadata"
        if value not in ("None", "Metadata", "Object"):
            raise errors.bad_request(f'includeObject: Unsupported value: "{value}": supported values: '
                                     f'"Metadata", "None", "Object"')
        return value

    def _respond(self, call: Call, accept: codec.Accept, result: Result) -> web.Response:
        body: Any = result.body
        text: str | None = None
        is_list = isinstance(body, dict) and "items" in body and body.get("kind", "").endswith("List")
        if accept.form == "Table" and body.get("kind") != "Status":
            items = body["items"] if is_list else [body]
            list_meta = body["metadata"] if is_list else {"resourceVersion": meta(body).get("resourceVersion", "")}
            body = printers.table(call.kind, items, include_object=self._include_object(call),
                                  list_meta=list_meta, api_version=f"meta.k8s.io/{accept.version}")
        elif accept.form.startswith("PartialObjectMetadata") and body.get("kind") != "Status":
            av = f"meta.k8s.io/{accept.version}"
            if is_list:
                body = {"kind": "PartialObjectMetadataList", "apiVersion": av, "metadata": body["metadata"],
                        "items": [{"kind": "PartialObjectMetadata", "apiVersion": av, "metadata": i["metadata"]}
                                  for i in body["items"]]}
            else:
                body = {"kind": "PartialObjectMetadata", "apiVersion": av, "metadata": body["metadata"]}
        elif not accept.yaml and result.encoded is not None:
            text = result.encoded
        if accept.yaml:
            resp = web.Response(status=result.code, text=codec.to_yaml(body), content_type="application/yaml")
        else:
            resp = web.Response(status=result.code, text=text if text is not None else codec.dumps(body),
                                content_type="application/json")
        for w in call.warnings:
            resp.headers.add("Warning", f'299 - "{_escape_warning(w)}"')
        return resp

    def _route(self, method: str, group: str, version: str, rest: list[str], query: Any) -> Route:
        """Map the path after /api/v1 or /apis/G/V to (kind, namespace, name, subresource, verb)."""
        namespace = None
        if len(rest) >= 3 and rest[0] == "namespaces" and registry.lookup(group, version, rest[2]) is not None \
                and (group != "" or rest[2] not in ("status", "finalize")):
            namespace = rest[1]
            rest = rest[2:]
        kind = registry.lookup(group, version, rest[0])
        if kind is None or len(rest) > 3:
            raise errors.path_not_found()
        if namespace is not None and not kind.namespaced:
            raise errors.path_not_found()
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else ""
        if sub and sub not in kind.subresources:
            raise errors.path_not_found()
        if name is not None and not name:
            raise errors.path_not_found()
        if name is None:
            if kind.namespaced and namespace is None and method not in ("GET",):
                raise errors.path_not_found() if method != "POST" else errors.method_not_allowed(
                    "create", kind.plural, kind.group)
            verb = {"GET": "watch" if params.query_bool(query.get("watch")) else "list", "POST": "create",
                    "DELETE": "deletecollection"}.get(method)
        elif sub == "binding":
            verb = "create" if method == "POST" else None
        else:
            verb = {"GET": "watch" if params.query_bool(query.get("watch")) else "get", "PUT": "update",
                    "PATCH": "patch", "DELETE": "delete"}.get(method)
            if sub and verb == "delete":
                verb = None
            if sub == "finalize" and verb not in ("update",):
                verb = None
        if verb is not None and not sub and verb not in kind.verbs:
            verb = None
        if verb is None:
            raise errors.APIError(405, "MethodNotAllowed", "the server does not allow this method on the "
                                  "requested resource", {})
        return Route(verb, kind, namespace, name, sub)


def _decode_protobuf(body: bytes) -> Obj:
    from dramock.apiserver import protobuf

    return protobuf.decode(body)


def _scope(route: Route) -> str:
    if route.kind is None:
        return ""
    if route.name:
        return "resource"
    if route.kind.namespaced and route.namespace:
        return "namespace"
    return "cluster"




def _escape_warning(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _json(obj: Obj, vary: bool = False) -> web.Response:
    resp = web.Response(text=codec.dumps(obj), content_type="application/json")
    if vary:
        resp.headers["Vary"] = "Accept"
    return resp


class _EmptyQuery(dict):
    def getall(self, key: str, default: Any = None) -> Any:
        return default if default is not None else []


_EMPTY_QUERY: Any = _EmptyQuery()
