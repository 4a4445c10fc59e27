"""pods/log, proxied to the pod's kubelet as kube-apiserver does (node InternalIP and
status.daemonEndpoints.kubeletEndpoint.Port), with upstream's checks and messages for the container choice;
and pods/exec, attach and portforward, which answer that dramock runs no containers."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import aiohttp
from aiohttp import web

from dramock import errors
from dramock.apiserver.rest import Call, Rest

Obj = dict[str, Any]
LOG_PARAMS = ("follow", "tailLines", "timestamps", "limitBytes", "previous", "sinceSeconds", "sinceTime")


def _container(pod: Obj, requested: str) -> str:
    name = pod["metadata"]["name"]
    spec = pod.get("spec") or {}
    containers = [c["name"] for c in spec.get("containers") or []]
    others = [c["name"] for c in (spec.get("initContainers") or []) + (spec.get("ephemeralContainers") or [])]
    if not requested:
        if len(containers) == 1:
            return containers[0]
        message = f"a container name must be specified for pod {name}, choose one of: [{' '.join(containers)}]"
        if others:
            message += f" or one of the init containers: [{' '.join(others)}]"
        raise errors.bad_request(message)
    if requested not in containers + others:
        raise errors.bad_request(f"container {requested} is not valid for pod {name}")
    return requested


def _kubelet_url(rest: Rest, pod: Obj) -> str:
    node_name = (pod.get("spec") or {}).get("nodeName")
    name = pod["metadata"]["name"]
    if not node_name:
        raise errors.bad_request(f'pod {name} does not have a host assigned')
    nodes = rest.registry.lookup("", "v1", "nodes")
    assert nodes is not None
    node = rest.store.get(nodes.storage_bucket, node_name)
    if node is None:
        raise errors.not_found("nodes", "", node_name)
    status = node.get("status") or {}
    address = next((a["address"] for a in status.get("addresses") or [] if a.get("type") == "InternalIP"), None)
    port = ((status.get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}).get("Port")
    if not address or not port:
        raise errors.APIError(500, "InternalError", f"no kubelet endpoint known for node {node_name}", {})
    host = f"[{address}]" if ":" in address else address
    return f"http://{host}:{port}"


async def serve_log(request: web.Request, rest: Rest, call: Call) -> web.StreamResponse:
    pod = rest.get(Call(call.kind, call.namespace, call.name, "", call.query, call.user_agent)).body
    container = _container(pod, call.param("container"))
    state = next((c.get("state") or {} for c in (pod.get("status") or {}).get("containerStatuses") or []
                  if c.get("name") == container), {})
    if not state or "waiting" in state:
        reason = (state.get("waiting") or {}).get("reason") or "ContainerCreating"
        raise errors.bad_request(f'container "{container}" in pod "{pod["metadata"]["name"]}" is waiting to start: '
                                 f"{reason}")
    url = (_kubelet_url(rest, pod) + f"/containerLogs/{quote(call.namespace or '')}/{quote(call.name or '')}/"
           f"{quote(container)}")
    params = {k: v for k in LOG_PARAMS if (v := call.param(k))}
    try:
        async with aiohttp.ClientSession() as session, \
                session.get(url, params=params, timeout=aiohttp.ClientTimeout(total=None, sock_connect=5)) as r:
            if r.status != 200:
                raise errors.bad_request((await r.text()).strip())
            resp = web.StreamResponse(headers={"Content-Type": "text/plain"})
            await resp.prepare(request)
            async for chunk in r.content.iter_any():
                await resp.write(chunk)
            await resp.write_eof()
            return resp
    except aiohttp.ClientError as e:
        raise errors.APIError(500, "InternalError", f"Get \"{url}\": {e}", {}) from e


def no_containers(call: Call) -> errors.APIError:
    what = {"exec": "exec into", "attach": "attach to", "portforward": "forward ports of"}[call.subresource]
    return errors.bad_request(f"dramock runs no containers: cannot {what} pod {call.namespace}/{call.name}; "
                              "`kubectl logs` shows what its containers would see")
