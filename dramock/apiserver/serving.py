"""Running the aiohttp application on a listening socket, with the connection limits kube-apiserver has.

aiohttp waits forever for a request's headers; Go's http.Server that kube-apiserver runs does not
(ReadHeaderTimeout). A connection whose request headers are not complete within `header_timeout` is
closed here, so that half-sent requests cannot pile up. Idle keep-alive connections close after
`keepalive_timeout`, as aiohttp does.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import signal
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import uvloop
from aiohttp import web, web_protocol

from dramock import errors
from dramock.apiserver import codec

log = logging.getLogger("dramock.apiserver")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class ServingOptions:
    host: str
    port: int
    header_timeout: float = 10.0
    keepalive_timeout: float = 75.0
    shutdown_timeout: float = 5.0
    secure_port: int = 0  # the TLS listener (0: none); requests there are authenticated and authorized
    ssl_context: ssl.SSLContext | None = None


class _HeaderDeadline(asyncio.Protocol):
    """Stands in front of aiohttp's protocol: the first request's headers must arrive by the deadline."""

    def __init__(self, inner: asyncio.Protocol, timeout: float) -> None:
        self.inner = inner
        self.timeout = timeout
        self.timer: asyncio.TimerHandle | None = None
        self.tail = b""
        self.transport: asyncio.BaseTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        self.timer = asyncio.get_running_loop().call_later(self.timeout, self._expire)
        self.inner.connection_made(transport)

    def _expire(self) -> None:
        self.timer = None
        # uvloop's transports are not asyncio.Transport subclasses: ask for what is used.
        abort = getattr(self.transport, "abort", None)
        if self.transport is not None and abort is not None and not self.transport.is_closing():
            abort()

    def data_received(self, data: bytes) -> None:
        if self.timer is not None:
            window = self.tail + data
            if b"\r\n\r\n" in window:  # the end of the request line and headers
                self.timer.cancel()
                self.timer = None
            else:
                self.tail = window[-3:]
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()

    def __getattr__(self, name: str) -> Any:  # anything else aiohttp asks of its protocol
        return getattr(self.inner, name)


class _StatusErrors(web_protocol.RequestHandler):
    """aiohttp's own answers to malformed HTTP (bad request line, oversized header, broken chunking) as
    Kubernetes Status objects instead of plain text, so that every error a client sees has one shape."""

    _REASONS = {400: "BadRequest", 413: "RequestEntityTooLarge", 431: "BadRequest"}

    def handle_error(self, request: Any, status: int = 500, exc: BaseException | None = None,
                     message: str | None = None) -> web.StreamResponse:
        plain = super().handle_error(request, status, exc, message)  # logs; raises if a response began
        if status >= 500:
            err = errors.internal("the server could not handle the request")
        else:
            text = (message or (str(exc) if exc else "") or "bad request").splitlines()[0][:500]
            err = errors.APIError(status, self._REASONS.get(status, "BadRequest"), text)
        resp = web.Response(status=plain.status, text=codec.dumps(err.status()), content_type="application/json")
        resp.force_close()
        return resp


async def _serve(app: web.Application, options: ServingOptions, handler: Handler, **handler_args: Any) -> None:
    runner = web.AppRunner(app, keepalive_timeout=options.keepalive_timeout,
                           shutdown_timeout=options.shutdown_timeout, **handler_args)
    await runner.setup()  # the application's start-up
    assert runner.server is not None
    # Every request goes to the one handler without the application's routing (path resolution, match info,
    # middleware chain): about 4 % of the bytecode a small create runs.
    runner.server.request_handler = handler  # type: ignore[assignment]  # requests made by the app: web.Request
    # What start-up built (schemas, OpenAPI documents, the loaded objects) lives as long as the process: full
    # garbage collections, which hold the interpreter (and so the event loop) throughout, need not go through
    # it again every time. (Here, not in the application: a test process that runs many apps would leak.)
    gc.collect()
    gc.freeze()
    loop = asyncio.get_running_loop()
    server = runner.server
    assert server is not None

    def protocol() -> asyncio.Protocol:
        handler = _StatusErrors(server, loop=loop, **server._kwargs)  # aiohttp's Server.__call__, our class
        return _HeaderDeadline(handler, options.header_timeout)

    listeners = []
    if options.port:
        listeners.append(await loop.create_server(protocol, options.host, options.port, reuse_address=True))
    if options.secure_port and options.ssl_context is not None:
        listeners.append(await loop.create_server(protocol, options.host, options.secure_port, reuse_address=True,
                                                  ssl=options.ssl_context))
    stopped = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stopped.set)
    try:
        await stopped.wait()
    finally:
        for listener in listeners:
            listener.close()  # stop accepting; open connections end in the runner's graceful shutdown
        await runner.cleanup()


def tls_context(cert_file: str, key_file: str, client_ca_file: str) -> ssl.SSLContext:
    """The secure port's TLS: its serving certificate, and client certificates verified against the client CA
    when a client offers one (optional: tokens and anonymous requests come without)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(cert_file, key_file)
    if client_ca_file:
        ctx.load_verify_locations(client_ca_file)
        ctx.verify_mode = ssl.CERT_OPTIONAL
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx


def run(app: web.Application, options: ServingOptions, handler: Handler, **handler_args: Any) -> None:
    """Serve `handler` until SIGINT/SIGTERM, with `app`'s start-up, shutdown and clean-up hooks around it, then
    shut down as web.run_app does, on uvloop's event loop."""
    # uvloop: measured 4-20 % less CPU per request than asyncio's own loop (bench/apiserver.py, server cpu ms/op).
    uvloop.run(_serve(app, options, handler, **handler_args))
