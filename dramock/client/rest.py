"""A small async REST client for the bundled components: they talk to the API server over HTTP only."""

from __future__ import annotations

import asyncio
import base64
import logging
import os
import ssl as ssl_module
import tempfile
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

import aiohttp
import yaml

from dramock import fastjson

if TYPE_CHECKING:
    from dramock.client.informer import Informer

log = logging.getLogger("dramock.client")

Obj = dict[str, Any]


class APIStatusError(Exception):
    """A non-2xx answer; `status` is the Kubernetes Status body."""

    def __init__(self, code: int, status: Obj):
        super().__init__(f"{code} {status.get('reason', '')}: {status.get('message', '')}")
        self.code = code
        self.status = status


class Endpoint(str):
    """A server URL that carries the credentials its kubeconfig named: the TLS context (cluster CA, client
    certificate) and a bearer token. It passes through code that takes a server URL as a plain string."""

    ssl: ssl_module.SSLContext | None = None
    token: str = ""


def _pem_file(entry: dict, key: str, base: str) -> str | None:
    """A kubeconfig's `key` (a path) or `key-data` (base64, written to a private temporary file) as a path."""
    if entry.get(key):
        return entry[key] if os.path.isabs(entry[key]) else os.path.join(base, entry[key])
    if entry.get(key + "-data"):
        fd, path = tempfile.mkstemp(prefix="dramock-kubeconfig-", suffix=".pem")
        with os.fdopen(fd, "wb") as f:
            f.write(base64.b64decode(entry[key + "-data"]))
        return path
    return None


def server_from_kubeconfig(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        cfg = yaml.safe_load(f)
    current = cfg.get("current-context")
    ctx = next((c["context"] for c in cfg.get("contexts", []) if c["name"] == current), None)
    cluster_name = ctx["cluster"] if ctx else cfg["clusters"][0]["name"]
    cluster = next(c["cluster"] for c in cfg["clusters"] if c["name"] == cluster_name)
    endpoint = Endpoint(cluster["server"].rstrip("/"))
    user_name = ctx.get("user") if ctx else None
    user = next((u.get("user") or {} for u in cfg.get("users") or [] if u.get("name") == user_name), {})
    base = os.path.dirname(os.path.abspath(path))
    if endpoint.startswith("https://"):
        ctx_ssl = ssl_module.create_default_context(cafile=_pem_file(cluster, "certificate-authority", base))
        if cluster.get("insecure-skip-tls-verify"):
            ctx_ssl.check_hostname = False
            ctx_ssl.verify_mode = ssl_module.CERT_NONE
        cert, key = _pem_file(user, "client-certificate", base), _pem_file(user, "client-key", base)
        if cert and key:
            ctx_ssl.load_cert_chain(cert, key)
        endpoint.ssl = ctx_ssl
    endpoint.token = user.get("token") or ""
    if not endpoint.token and user.get("tokenFile"):
        with open(user["tokenFile"], encoding="utf-8") as f:
            endpoint.token = f.read().strip()
    return endpoint


def resource_path(group: str, version: str, plural: str, namespace: str | None = None,
                  name: str | None = None, subresource: str = "") -> str:
    base = f"/apis/{group}/{version}" if group else f"/api/{version}"
    if namespace:
        base += f"/namespaces/{namespace}"
    base += f"/{plural}"
    if name:
        base += f"/{name}"
    if subresource:
        base += f"/{subresource}"
    return base


# client-go's rest client retries an answer that carries Retry-After (429, or any 5xx) up to 10 times.
MAX_RETRIES = 10


def retry_after(code: int, header: str | None) -> float | None:
    """Seconds to wait before retrying an answer, as client-go's checkWait decides; None: do not retry."""
    if (code != 429 and code < 500) or header is None:
        return None
    try:
        return max(float(int(header)), 0.0)
    except ValueError:
        return None


class Client:
    def __init__(self, server: str, user_agent: str):
        self.server = server.rstrip("/")
        self.user_agent = user_agent
        self.ssl = getattr(server, "ssl", None)  # an Endpoint's credentials, if the server came from a kubeconfig
        self.token = getattr(server, "token", "")
        self._session: aiohttp.ClientSession | None = None
        # path -> the one informer of that path its users share; None: each user makes its own
        # (the controller manager sets a dict: client-go's SharedInformerFactory). See informer.shared_informer.
        self.shared_informers: dict[str, Informer] | None = None

    async def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            headers = {"User-Agent": self.user_agent}
            if self.token:
                headers["Authorization"] = f"Bearer {self.token}"
            self._session = aiohttp.ClientSession(headers=headers,
                                                  connector=aiohttp.TCPConnector(ssl=self.ssl) if self.ssl else None,
                                                  timeout=aiohttp.ClientTimeout(total=None, sock_connect=10))
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()

    async def request(self, method: str, path: str, body: Any = None, params: dict[str, str] | None = None,
                      content_type: str = "application/json", accept: str | None = None) -> Obj:
        s = await self.session()
        url = self.server + path + (("?" + urlencode(params)) if params else "")
        data = fastjson.dumpb(body) if body is not None else None
        headers = {"Content-Type": content_type}
        if accept:
            headers["Accept"] = accept
        for attempt in range(MAX_RETRIES + 1):
            async with s.request(method, url, data=data, headers=headers,
                                 timeout=aiohttp.ClientTimeout(total=60)) as r:
                raw = await r.read()
                payload = fastjson.loads(raw) if raw else {}
                if r.status < 300:
                    return payload
                wait = retry_after(r.status, r.headers.get("Retry-After"))
                if wait is None or attempt == MAX_RETRIES:
                    raise APIStatusError(r.status, payload)
            log.debug("%s %s: %d, retrying in %ss (Retry-After)", method, path, r.status, wait)
            await asyncio.sleep(wait)
        raise AssertionError("unreachable")

    async def watch(self, path: str, params: dict[str, str]) -> AsyncIterator[Obj]:
        """Yield watch events; ends when the server closes the stream."""
        s = await self.session()
        q = dict(params, watch="1")
        async with s.get(self.server + path + "?" + urlencode(q)) as r:
            if r.status >= 300:
                raise APIStatusError(r.status, fastjson.loads(await r.read() or b"{}"))
            async for line in r.content:
                if line.strip():
                    yield fastjson.loads(line)
