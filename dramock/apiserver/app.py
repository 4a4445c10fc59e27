"""The aiohttp application: routing, content negotiation, errors as Status, metrics, health, discovery."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import random
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

import aiohttp
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest

from dramock import errors
from dramock.admission.chain import SYSTEM_NAMESPACES, Admission
from dramock.apiserver import authfilter as gate
from dramock.apiserver import codec, discovery, explainapi, health, openapi, params, protobuf, reviews
from dramock.apiserver import faults as faults_endpoint
from dramock.apiserver.metrics import Metrics
from dramock.apiserver.rest import (
    Call,
    PreparedCreate,
    PreparedUpdate,
    Rest,
    Result,
    meta,
    stamp_resource_version,
)
from dramock.apiserver.watch import WatchHandler
from dramock.auth.security import Security, SecurityConfig
from dramock.faults import Faults, api_error
from dramock.registry import Registry, printing
from dramock.registry.kind import Kind
from dramock.schemas import versions
from dramock.schemas.featuregates import FeatureGates
from dramock.storage.groupcommit import track_writes
from dramock.storage.revlog import DEFAULT_HISTORY, RevisionLog, StaleRead, StorageFailure, sqlite_url

log = logging.getLogger("dramock.apiserver")

# Attempts at a write whose object another API server replica keeps changing under it (shared database).
_STALE_RETRIES = 16
T = TypeVar("T")

Obj = dict[str, Any]


@dataclass
class ServerConfig:
    data_dir: str = "./dramock-data"
    database_url: str = ""  # default: SQLite file in data_dir
    feature_gates: dict[str, bool] = field(default_factory=dict)
    # --runtime-config, parsed: the optional (group, version) pairs turned on or off.
    runtime_config: dict[tuple[str, str], bool] = field(default_factory=dict)
    # Like kube-apiserver's --etcd-compaction-interval: history older than one interval is compacted.
    compaction_interval: float = 300.0
    bookmark_interval: float = 10.0
    # kube-apiserver's --max-requests-inflight / --max-mutating-requests-inflight (0: unlimited); watches are
    # long-running and not counted.
    max_requests_inflight: int = 400
    max_mutating_requests_inflight: int = 200
    fault_rules: list[str] = field(default_factory=list)  # dramock.faults rules to start with (--inject)
    fault_seed: int | None = None  # seeds the random choices of rate-limited rules (--inject-seed)
    service_cluster_ip_range: str = "10.96.0.0/12"  # --service-cluster-ip-range
    # Events kept for watches (and replayed at start-up); older resourceVersions answer 410 Gone.
    watch_history: int = DEFAULT_HISTORY
    # Authentication and authorization of the secure port (the plain port is always system:unsecured).
    security: SecurityConfig = field(default_factory=SecurityConfig)
    # A create whose body is at least this big is decoded, validated and encoded in a worker thread, so that
    # the event loop (every other request, watch and probe) is not held for the hundreds of milliseconds or
    # seconds that takes (0: never).
    offload_body_bytes: int = 64 * 1024

    @property
    def url(self) -> str:
        return self.database_url or sqlite_url(self.data_dir)


async def _expect(request: web.Request) -> None:
    """A client that sent `Expect: 100-continue` waits for this before sending its body; any other
    expectation is refused (417)."""
    if request.version != aiohttp.HttpVersion11:
        return
    if request.headers["Expect"].lower() != "100-continue":
        raise web.HTTPExpectationFailed(text=f"Unknown Expect: {request.headers['Expect']}")
    await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
    request.writer.output_size = 0  # the interim answer is not part of the response's size


# Status reasons of the HTTP codes aiohttp itself may answer with.
_READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_REASONS = {400: "BadRequest", 404: "NotFound", 405: "MethodNotAllowed", 406: "NotAcceptable",
            413: "RequestEntityTooLarge", 415: "UnsupportedMediaType"}


class InflightLimits:
    """Upstream's max-in-flight filter: requests beyond the limit get 429 with Retry-After. Long-running
    requests (watches) and health checks are not counted."""

    _MUTATING = frozenset({"POST", "PUT", "PATCH", "DELETE"})

    def __init__(self, readonly: int, mutating: int) -> None:
        self.limits = {False: readonly, True: mutating}
        self.current = {False: 0, True: 0}

    def admit(self, request: web.Request) -> _Admitted:
        """A context for the request's lifetime: counted against its limit while it runs (429 beyond it)."""
        if (request.method == "GET" and request.query.get("watch") not in (None, "0", "false", "False")) or \
                request.path.startswith(("/healthz", "/livez", "/readyz")):
            return _Admitted(self.current, None)
        mutating = request.method in self._MUTATING
        limit = self.limits[mutating]
        if limit and self.current[mutating] >= limit:
            raise errors.APIError(429, "TooManyRequests", "Too many requests, please try again later.",
                                  {"retryAfterSeconds": 1}, retry_after=1)
        return _Admitted(self.current, mutating)


class _Admitted:
    """An admitted request's place in the in-flight count (None: not counted). A class rather than a generator
    context manager: it wraps every request."""

    __slots__ = ("current", "counted")

    def __init__(self, current: dict[bool, int], counted: bool | None) -> None:
        self.current, self.counted = current, counted

    def __enter__(self) -> None:
        if self.counted is not None:
            self.current[self.counted] += 1

    def __exit__(self, *_exc: object) -> None:
        if self.counted is not None:
            self.current[self.counted] -= 1


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
        # What this server serves, and each kind's strategy (which sees the gates and, for the DRA
        # admin-access rule, the namespaces' labels).
        self.registry = Registry.build(config.runtime_config, FeatureGates(config.feature_gates),
                                       self._namespace_labels)
        self.admission = Admission(self.store, self.registry, config.service_cluster_ip_range)
        self.security = Security(config.security, self.store, config.data_dir)
        self.admission.plugins += gate.admission_plugins(self.security)
        self.rest = Rest(self.store, self.admission, self.registry)
        self.metrics = Metrics()
        # One protobuf encoder for responses and watch frames: it keeps each stored object's bytes.
        self.protobuf = protobuf.Encoder()
        self.watch = WatchHandler(self.store, config.bookmark_interval, self.metrics.on_watchers, self.protobuf)
        self.health = health.HealthState()
        self.inflight = InflightLimits(config.max_requests_inflight, config.max_mutating_requests_inflight)
        self.faults = Faults(counter=self.metrics.injected_faults, rng=random.Random(config.fault_seed))
        for rule in config.fault_rules:
            self.faults.add(rule)
        self._compactor: asyncio.Task | None = None
        # One worker for big requests' CPU work: they queue behind each other, and with the event loop the
        # process runs at most two threads that compete for the interpreter.
        self._workers = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dramock-big-request")

    def _namespace_labels(self, name: str) -> dict[str, str] | None:
        ns = self.store.get("namespaces", name)
        return (ns.get("metadata") or {}).get("labels") if ns else None

    # ---------------------------------------------------------------- lifecycle

    def app(self) -> web.Application:
        """The application whose start-up, shutdown and clean-up hooks run around serving. It has no routes:
        serving.run hands every request to `handle` itself."""
        # Bodies are size-checked by us (413 as a Status); aiohttp's own limit sits just above.
        app = web.Application(client_max_size=codec.MAX_BODY + 1024 * 1024)
        app.on_startup.append(self._on_startup)
        app.on_shutdown.append(self._on_shutdown)
        app.on_cleanup.append(self._on_cleanup)
        return app

    async def _on_startup(self, _app: web.Application) -> None:
        self._seed_namespaces()
        self._seed_kubernetes_service()
        gate.seed_bootstrap_policy(self.rest, self.store)
        self._compactor = asyncio.create_task(self.store.run(self.config.compaction_interval))
        self.health.started = True

    async def _on_shutdown(self, _app: web.Application) -> None:
        self.health.shutting_down = True
        self.watch.close_all()

    async def _on_cleanup(self, _app: web.Application) -> None:
        if self._compactor:
            self._compactor.cancel()
        self._workers.shutdown(wait=True, cancel_futures=True)
        self.store.close()

    def _seed_namespaces(self) -> None:
        kind = self.registry.lookup("", "v1", "namespaces")
        assert kind is not None
        for ns in SYSTEM_NAMESPACES:
            if self.store.get("namespaces", ns) is None:
                call = Call(kind, None, None, "", _EMPTY_QUERY, user_agent="kube-apiserver")
                try:
                    self.rest.create_object(call, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
                except errors.APIError as e:  # another replica on the same database created it first
                    if e.code != 409:
                        raise

    def _seed_kubernetes_service(self) -> None:
        """The `kubernetes` Service in `default` on the range's first address (upstream's bootstrap controller),
        which `kubectl cluster-info` and in-cluster clients look for."""
        kind = self.registry.lookup("", "v1", "services")
        assert kind is not None
        if self.store.get(kind.storage_bucket, "default/kubernetes") is not None:
            return
        call = Call(kind, "default", None, "", _EMPTY_QUERY, user_agent="kube-apiserver")
        try:
            self.rest.create_object(call, {
                "apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "kubernetes", "namespace": "default",
                             "labels": {"component": "apiserver", "provider": "kubernetes"}},
                "spec": {"type": "ClusterIP", "clusterIP": self.admission.service_ips.kubernetes_ip,
                         "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}]}})
        except errors.APIError as e:  # another replica on the same database created it first
            if e.code != 409:
                raise

    # ---------------------------------------------------------------- HTTP

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """Every request: who is asking, the in-flight limit, durability of writes, errors as Status, metrics."""
        start = time.perf_counter()
        request["route"] = None
        try:
            if request.headers.get("Expect"):  # what aiohttp's router did before a handler ran
                await _expect(request)
            secure = gate.is_secure(request)
            request["user"] = self.security.user(secure, gate.peercert(request) if secure else None, request.headers)
            if request.method in _READ_METHODS:
                self.store.settle()  # a read sees every accepted write, committed
                with self.inflight.admit(request):
                    resp = await self._dispatch(request)
            else:
                with self.inflight.admit(request), track_writes() as written:
                    resp = await self._dispatch(request)
                    await self.store.wait_durable(written)  # acknowledged = committed
        except errors.APIError as e:
            resp = self._status_response(request, e)
        except web.HTTPRequestEntityTooLarge:
            resp = self._status_response(request, errors.request_entity_too_large(codec.MAX_BODY))
        except web.HTTPException as e:  # aiohttp's own (e.g. a health check that does not exist): still a Status
            resp = self._status_response(request, errors.APIError(e.status, _REASONS.get(e.status, "BadRequest"),
                                                                  e.text or e.reason))
        except aiohttp.http_exceptions.HttpProcessingError as e:  # a body that cannot be read (broken chunking)
            resp = self._status_response(request, errors.bad_request(f"error reading the request body: {e.message}"))
        except StorageFailure as e:  # the SQL detail is in the log (revlog), never in the answer
            log.error("storage failed serving %s %s", request.method, request.path)
            resp = self._status_response(request, errors.internal(str(e)))
        except Exception as e:  # never a traceback to the client
            log.exception("internal error serving %s %s", request.method, request.path)
            resp = self._status_response(request, errors.internal(type(e).__name__ + ": " + str(e)))
        route: Route | None = request["route"]
        if route is not None and route.kind is not None:
            k = route.kind
            labels = (route.verb.upper() if route.verb != "watch" else "WATCH", k.group, k.version, k.plural,
                      route.subresource, _scope(route), "apiserver")
            self.metrics.observe_request(labels, str(resp.status), time.perf_counter() - start)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("%s %s %s %d %.1fms", request.method, request.path_qs, request.headers.get("User-Agent", ""),
                      resp.status, (time.perf_counter() - start) * 1000)
        if not resp.prepared and not request.content.at_eof():
            # An answer given before the body was read (404, 405, 429) still reads it, as Go's server does, so a
            # keep-alive client that is still sending it is not reset.
            with contextlib.suppress(Exception):
                await request.release()
        return resp

    def _status_response(self, request: web.Request, e: errors.APIError) -> web.Response:
        if request["route"] is not None and codec.negotiate_error(request.headers.get("Accept")).protobuf:
            resp = web.Response(status=e.code, body=protobuf.encode(e.status()), content_type=codec.PROTOBUF)
        else:
            resp = _json(e.status(), status=e.code)
        if e.retry_after is not None:
            resp.headers["Retry-After"] = str(e.retry_after)
        return resp

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        path = request.path.rstrip("/") or "/"
        parts = [p for p in path.split("/") if p]
        if not parts:
            return _json({"paths": sorted(["/api", "/api/v1", "/apis", "/healthz", "/livez", "/readyz", "/metrics",
                                           "/openapi/v2", "/openapi/v3", "/version", "/dramock/explain",
                                           "/ui/"])})
        head = parts[0]
        if not ((head == "api" and len(parts) > 2) or (head == "apis" and len(parts) > 3)):
            gate.check_path(self.security, request)
        if head in ("healthz", "livez", "readyz"):
            return health.respond(head, parts[1:], request, self.health)
        if head == "version" and len(parts) == 1:
            return _json(discovery.version_info())
        if head == "metrics" and len(parts) == 1:
            for k in self.registry.kinds:
                self.metrics.objects.labels(k.group_resource).set(self.store.count(k.storage_bucket))
            # The process-wide registry adds process metrics and, under `serve`, the in-process components'
            # (e.g. dynamic_resource_allocation_resource_claims from the ResourceClaim controller).
            return web.Response(body=generate_latest(self.metrics.registry) + generate_latest(REGISTRY),
                                headers={"Content-Type": CONTENT_TYPE_LATEST})
        if head == "openapi":
            return self._openapi(request, parts)
        if head == "dramock" and parts[1:2] == ["explain"] and request.method == "GET":
            return explainapi.handle_explain(self.store, self.registry.gates, parts[2:],
                                             request.query)
        if head == "ui" and request.method in ("GET", "HEAD"):
            return explainapi.handle_ui(parts[1:])
        if head == "dramock" and len(parts) >= 2 and parts[1] == "faults":
            return await faults_endpoint.serve(self.faults, request, parts[2:])
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
            if not self.registry.serves(group):
                raise errors.path_not_found()
            if len(parts) == 2:
                return _discovery_document(request, discovery.group(group, self.registry) or {})
            if not self.registry.serves(group, parts[2]):
                raise errors.path_not_found()
            return await self._resource_request(request, group, parts[2], parts[3:])
        raise errors.path_not_found()

    def _discovery(self, request: web.Request, core: bool) -> web.Response:
        form = discovery.negotiate(request.headers.get("Accept"))
        if form.aggregated:
            body, etag = (discovery.aggregated_protobuf_bytes if form.protobuf else discovery.aggregated_bytes)(
                core, self.registry)
            content_type = discovery.AGGREGATED_V2_PROTOBUF if form.protobuf else discovery.AGGREGATED_V2
            return web.Response(body=body, headers={"Content-Type": content_type, "ETag": etag, "Vary": "Accept"})
        return _discovery_document(request, discovery.core_versions(registry=self.registry) if core
                                   else discovery.group_list(self.registry))

    def _openapi(self, request: web.Request, parts: list[str]) -> web.Response:
        if parts[1:] == ["v2"]:
            status, headers, body = openapi.v2_response(request.headers.get("Accept", ""),
                                                        request.headers.get("If-None-Match"), self.registry)
            return web.Response(status=status, headers=headers, body=body)
        if parts[1:] == ["v3"]:
            body, etag = openapi.v3_index_bytes(self.registry)
            if request.headers.get("If-None-Match") == etag:
                return web.Response(status=304, headers={"ETag": etag})
            return web.Response(body=body, headers={"Content-Type": "application/json", "ETag": etag})
        if len(parts) > 2 and parts[1] == "v3":
            status, headers, body = openapi.v3_response("/".join(parts[2:]), request.query.get("hash"),
                                                        self.registry)
            return web.Response(status=status, headers=headers, body=body)
        raise errors.path_not_found()

    # ---------------------------------------------------------------- fault injection (dramock.faults)

    async def _inject(self, route: Route, call: Call) -> None:
        """Apply the `api` fault rule firing for this request, if any: its latency, then its error."""
        kind = route.kind
        assert kind is not None
        rule = self.faults.for_request(route.verb, kind.plural, kind.group, route.subresource,
                                       route.namespace or "", route.name or "", call.user_agent)
        if rule is None:
            return
        if rule.latency:
            await asyncio.sleep(rule.latency)
        if rule.code is not None:
            raise api_error(rule, kind.plural, kind.group, route.name or "")

    # ---------------------------------------------------------------- resources

    async def _resource_request(self, request: web.Request, group: str, version: str,
                                rest: list[str]) -> web.StreamResponse:
        if not rest:
            return _discovery_document(request, discovery.resource_list(group, version, self.registry) or {})
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
                    user_agent=request.headers.get("User-Agent", ""), verb=route.verb, user=request["user"])
        gate.check_resource(self.security, call)
        if kind.group == versions.GROUP and (deprecated := versions.deprecation_warning(kind.version, kind.kind)):
            call.warnings.append(deprecated)
        if call.subresource in ("log", "exec", "attach", "portforward"):
            from dramock.apiserver import podlog

            if call.subresource != "log":
                raise podlog.no_containers(call)
            return await podlog.serve_log(request, self.rest, call)
        accept = codec.negotiate(request.headers.get("Accept"))
        if self.faults.rules:  # (a coroutine per request otherwise)
            await self._inject(route, call)
        if route.verb == "watch":
            fault = self.faults.for_watch(kind.plural, kind.group, route.namespace or "", call.user_agent) \
                if self.faults.rules else None
            return await self.watch.serve(request, call, accept, self._table_for_watch(call), fault)
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
        verb = route.verb
        # A big create or update is computed in the worker thread, then committed here (prepared).
        prepared: PreparedCreate | PreparedUpdate | Result | None = None
        before_prepared = len(call.warnings)
        if self.config.offload_body_bytes and len(body) >= self.config.offload_body_bytes \
                and verb in ("create", "update") and self._plain_write(call):
            prepare = self.rest.prepare_create if verb == "create" else self.rest.prepare_update
            try:
                prepared = await self._off_loop(prepare, call, body, content_type, True)
            except StaleRead:  # the object changed while it was read off the loop: computed here instead
                del call.warnings[before_prepared:]
        warnings = len(call.warnings)
        for attempt in range(_STALE_RETRIES):
            try:
                if isinstance(prepared, PreparedCreate):
                    result = self.rest.commit_create(call, prepared)
                elif isinstance(prepared, PreparedUpdate):
                    result = self.rest.commit_update(call, prepared)
                elif isinstance(prepared, Result):  # nothing to write
                    result = prepared
                else:
                    result = self._verb(call, verb, body, content_type)
                break
            except StaleRead:
                # Another replica wrote the object after this one last followed the log: catch up, do it again.
                # A write still in flight on some replica can hold the log back: give it a moment to commit.
                if isinstance(prepared, PreparedUpdate):  # computed from an object since changed: again, here
                    prepared = None
                    warnings = before_prepared
                del call.warnings[warnings:]
                if attempt:
                    await asyncio.sleep(min(0.005 * 2 ** attempt, 0.2))
                self.store.catch_up()
        else:
            raise errors.conflict(kind.plural, kind.group, call.name or "", errors.STALE_OBJECT)
        # What a read or a real write answers is the stored object; a dry run's answer is not.
        stored = verb in ("get", "list") or (verb in ("create", "update", "patch") and not call.dry_run)
        if prepared is not None:  # a big object's answer (protobuf, YAML, a Table) is encoded off the loop too
            return await self._off_loop(self._respond, call, accept, result, stored)
        return self._respond(call, accept, result, stored=stored)

    def _off_loop(self, work: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """`work(*args)` in the worker thread for big requests."""
        return asyncio.get_running_loop().run_in_executor(self._workers, _without_gc_pauses, work, *args)

    @staticmethod
    def _plain_write(call: Call) -> bool:
        """A create or update of an object of the kind (not a subresource such as a binding or the status, not a
        review)."""
        return not call.subresource and not reviews.is_review(call.kind)

    def _verb(self, call: Call, verb: str, body: bytes, content_type: str) -> Result:
        if call.subresource == "scale":
            from dramock.apiserver import scale

            return scale.handle(self.rest, call, verb, body, content_type)
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
        if reviews.is_review(call.kind):
            return reviews.review(call, body, content_type, self.security)
        if call.subresource == "token":
            return gate.token_request(self.security, self.store, call, body, content_type)
        return self.rest.create(call, body, content_type)

    def _bind(self, call: Call, body: bytes, content_type: str) -> Result:
        """The binding subresource (pods/binding, what the scheduler calls): the kind's strategy makes the bound
        object, written as is (binding bypasses the spec-immutability of updates, as upstream's BindingREST)."""
        doc, _ = codec.parse_body(body, content_type)
        codec.check_types(doc, "io.k8s.api.core.v1.Binding", "Binding", "v1")
        target = (doc.get("target") or {}).get("name")
        name = (doc.get("metadata") or {}).get("name") or call.name
        if not target:
            raise errors.invalid("Binding", "", name or "", [{"reason": "FieldValueRequired",
                                                             "message": "Required value", "field": "target.name"}])
        kind = call.kind
        current = self.rest.get(Call(kind, call.namespace, name, "", call.query, call.user_agent)).body
        bound = self.registry.strategy(kind).bind(current, target)
        self.rest.store.update(kind.storage_bucket, f"{call.namespace}/{name}", bound)
        return Result({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}, 201)

    def _table_for_watch(self, call: Call) -> Any:
        def render(kind: Kind, objs: list[Obj], with_columns: bool) -> Obj:
            return printing.table(kind, objs, include_object=self._include_object(call),
                                  no_headers=not with_columns)
        return render

    @staticmethod
    def _include_object(call: Call) -> str:
        value = call.param("includeObject") or "Metadata"
        if value not in ("None", "Metadata", "Object"):
            raise errors.bad_request(f'includeObject: Unsupported value: "{value}": supported values: '
                                     f'"Metadata", "None", "Object"')
        return value

    def _respond(self, call: Call, accept: codec.Accept, result: Result, stored: bool = False) -> web.Response:
        """Encode a verb's result as negotiated; `stored`: the body holds stored objects."""
        body: Any = result.body
        text: str | None = None
        is_list = isinstance(body, dict) and "items" in body and body.get("kind", "").endswith("List")
        if accept.form == "Table" and body.get("kind") != "Status":
            items = body["items"] if is_list else [body]
            list_meta = body["metadata"] if is_list else {"resourceVersion": meta(body).get("resourceVersion", "")}
            body = printing.table(call.kind, items, include_object=self._include_object(call),
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
        if accept.protobuf and protobuf.message_class(body.get("apiVersion", ""), body.get("kind", "")) is None \
                and accept.json_fallback:
            accept = codec.Accept()  # a kind without a compiled contract, to a client that also takes JSON
        if accept.protobuf:
            resp = web.Response(status=result.code, body=self.protobuf.encode(body, stored),
                                content_type=codec.PROTOBUF)
        elif accept.yaml:
            resp = web.Response(status=result.code, body=codec.to_yaml(body).encode(),
                                headers={"Content-Type": "application/yaml"})
        else:
            resp = web.Response(status=result.code, body=(text if text is not None else codec.dumps(body)).encode(),
                                headers={"Content-Type": "application/json"})
        for w in call.warnings:
            resp.headers.add("Warning", codec.warning_header(w))
        return resp

    def _route(self, method: str, group: str, version: str, rest: list[str], query: Any) -> Route:
        """Map the path after /api/v1 or /apis/G/V to (kind, namespace, name, subresource, verb)."""
        namespace = None
        if len(rest) >= 3 and rest[0] == "namespaces" and self.registry.lookup(group, version, rest[2]) is not None \
                and (group != "" or rest[2] not in ("status", "finalize")):
            namespace = rest[1]
            rest = rest[2:]
        kind = self.registry.lookup(group, version, rest[0])
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
        elif sub in ("binding", "token"):
            verb = "create" if method == "POST" else None
        elif sub in ("exec", "attach", "portforward"):
            verb = {"GET": "get", "POST": "create"}.get(method)
        elif sub == "log":
            verb = "get" if method == "GET" else None
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


def _without_gc_pauses(fn: Callable[..., T], *args: Any) -> T:
    """Run a big request's CPU work (in the worker thread) with Python's cyclic garbage collector paused.

    Its many short-lived containers would otherwise trigger full collections of the whole heap, each holding
    the interpreter for 100-250 ms: the event loop thread would wait that long. What the work leaves behind
    is freed by reference counting; collection resumes when it ends.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        return fn(*args)
    finally:
        if enabled:
            gc.enable()


def _scope(route: Route) -> str:
    if route.kind is None:
        return ""
    if route.name:
        return "resource"
    if route.kind.namespaced and route.namespace:
        return "namespace"
    return "cluster"




def _discovery_document(request: web.Request, obj: Obj) -> web.Response:
    """A legacy discovery document (meta/v1 APIVersions, APIGroupList, APIGroup, APIResourceList), negotiated."""
    if obj and discovery.negotiate(request.headers.get("Accept")).protobuf:
        resp = web.Response(body=protobuf.encode(obj), content_type=codec.PROTOBUF)
        resp.headers["Vary"] = "Accept"
        return resp
    return _json(obj, vary=True)


def _json(obj: Obj, vary: bool = False, status: int = 200) -> web.Response:
    # Exactly `application/json`, without aiohttp's charset parameter: clients such as lightkube compare it.
    resp = web.Response(status=status, body=codec.dumps(obj).encode(), headers={"Content-Type": "application/json"})
    if vary:
        resp.headers["Vary"] = "Accept"
    return resp


class _EmptyQuery(dict):
    def getall(self, key: str, default: Any = None) -> Any:
        return default if default is not None else []


_EMPTY_QUERY: Any = _EmptyQuery()
