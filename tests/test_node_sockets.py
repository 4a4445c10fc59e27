"""A simulated node's plugin sockets fit the Unix socket limit for every length of --data-dir, and a socket
that cannot be bound is an error that names the path and its length."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import tempfile

import pytest

from dramock.cli import EXAMPLE_DRIVER, _node_root
from dramock.kubelet.exampledriver import run_driver
from dramock.kubelet.sockets import (
    DRIVER_NAME_ROOM,
    UNIX_SOCKET_PATH_MAX,
    SocketPathError,
    check_socket_path,
    driver_sockets,
)
from tests.helpers import start_server, stop, wait_for

ROOM = "d" * DRIVER_NAME_ROOM  # the longest driver name a node root is sized for


def _data_dir_of_length(base: str, length: int) -> str:
    """An absolute path of exactly `length` characters below `base`."""
    pad = length - len(base) - 1
    assert pad >= 1, (base, length)
    return os.path.join(base, "d" * pad)


@pytest.fixture
def short_base() -> str:
    base = tempfile.mkdtemp(prefix="ds", dir="/tmp")
    yield base
    shutil.rmtree(base, ignore_errors=True)


def test_node_root_fits_every_data_dir_length(short_base: str) -> None:
    roots = []
    for length in range(len(short_base) + 2, 220):
        data_dir = _data_dir_of_length(short_base, length)
        root = _node_root(data_dir, "node-1")
        roots.append(root)
        longest = max(driver_sockets(root, EXAMPLE_DRIVER) + driver_sockets(root, ROOM), key=len)
        assert len(longest) <= UNIX_SOCKET_PATH_MAX, (length, longest)
        if root.startswith(os.path.abspath(data_dir)):
            continue
        # A fallback happens only where the data dir's own layout would not fit.
        inside = os.path.join(data_dir, "nodes", "node-1")
        assert max(len(p) for p in driver_sockets(inside, ROOM)) > UNIX_SOCKET_PATH_MAX, length
    for root in roots:
        if not root.startswith(short_base):
            shutil.rmtree(root, ignore_errors=True)


def test_socket_path_over_the_limit_names_path_and_length() -> None:
    path = "/tmp/" + "x" * 110 + ".sock"
    with pytest.raises(SocketPathError) as err:
        check_socket_path(path)
    assert path in str(err.value) and f"{len(path)} bytes" in str(err.value) and "107" in str(err.value)
    check_socket_path("/tmp/" + "x" * (UNIX_SOCKET_PATH_MAX - 10) + ".sock")  # 107 bytes exactly: fine


def test_driver_refuses_a_registry_dir_too_deep_for_its_socket(short_base: str) -> None:
    deep = _data_dir_of_length(short_base, 90)
    stop_event = asyncio.Event()
    with pytest.raises(SocketPathError) as err:
        asyncio.run(run_driver("http://127.0.0.1:9", "node-1", root_dir=deep, stop=stop_event))
    assert os.path.join(deep, "plugins_registry", f"{EXAMPLE_DRIVER}-reg.sock") in str(err.value)


# The longest data dir whose node sockets fit inside it.
LIMIT = UNIX_SOCKET_PATH_MAX - (max(len(p) for p in driver_sockets(os.path.join("", "nodes", "node-1"), ROOM)) + 1)


@pytest.mark.e2e
@pytest.mark.parametrize("length", sorted({LIMIT - 3, LIMIT - 1, LIMIT, LIMIT + 1, LIMIT + 2, 53, 54, LIMIT + 60}))
def test_serve_registers_both_nodes_around_the_socket_limit(short_base: str, length: int) -> None:
    """Lengths around the last one whose node root fits inside the data dir, the 53 and 54 characters that once
    failed silently, and one far past them."""
    tmp = _data_dir_of_length(short_base, length - len("/data"))
    os.makedirs(tmp)
    s = start_server(tmp, "--nodes", "2", command="serve")
    try:
        assert len(s.data_dir) == length

        def slice_nodes() -> set[str]:
            listed = json.loads(s.kubectl("get", "resourceslices", "-o", "json").stdout)
            return {sl["spec"]["nodeName"] for sl in listed["items"]}

        wait_for(lambda: slice_nodes() == {"node-1", "node-2"}, 30, interval=0.2,
                 what=f"both nodes' slices with a {length}-character data dir")
        inside = os.path.isdir(os.path.join(s.data_dir, "nodes", "node-1", "plugins_registry"))
        assert inside == (length <= LIMIT), "the node root leaves the data dir only when it must"
    finally:
        stop(s)
