"""Where a node's DRA plugin sockets live, and the Unix socket path limit they must fit.

Upstream layout: `<root>/plugins_registry/<driver>-reg.sock` (the registration socket the kubelet watches)
and `<root>/plugins/<driver>/dra.sock` (the driver's DRAPlugin endpoint). The kubelet shim, the example driver
and `serve` all name the sockets through here, so the length check measures the paths that are bound.
"""

from __future__ import annotations

import os

# sockaddr_un.sun_path holds 108 bytes on Linux, the terminating NUL included.
UNIX_SOCKET_PATH_MAX = 107


class SocketPathError(OSError):
    """A Unix socket that cannot be bound; the message names the path and its length."""


def registry_dir(root_dir: str) -> str:
    return os.path.join(root_dir, "plugins_registry")


def plugins_dir(root_dir: str) -> str:
    return os.path.join(root_dir, "plugins")


def registration_socket(registry: str, driver: str) -> str:
    return os.path.join(registry, f"{driver}-reg.sock")


def plugin_socket(plugins: str, driver: str) -> str:
    return os.path.join(plugins, driver, "dra.sock")


def driver_sockets(root_dir: str, driver: str) -> list[str]:
    """Every socket a driver binds under a node root laid out as upstream's kubelet root."""
    return [registration_socket(registry_dir(root_dir), driver), plugin_socket(plugins_dir(root_dir), driver)]


# A node root must leave room for the sockets of drivers other than the example one (a user's driver runs on the
# simulated nodes too): it is sized for driver names up to this long (DRA allows 63, but a root sized for that
# would leave almost every data dir; `<data dir>/nodes/<node>` stays the root for data dirs up to ~40 characters).
DRIVER_NAME_ROOM = 24


def root_fits(root_dir: str) -> bool:
    """Whether every socket of a driver with a name up to DRIVER_NAME_ROOM characters fits under `root_dir`."""
    return all(fits(p) for p in driver_sockets(root_dir, "d" * DRIVER_NAME_ROOM))


def fits(path: str) -> bool:
    return len(os.fsencode(path)) <= UNIX_SOCKET_PATH_MAX


def check_socket_path(path: str) -> None:
    """Refuse a path the kernel would refuse, saying so, instead of a bind that fails without a reason."""
    size = len(os.fsencode(path))
    if size > UNIX_SOCKET_PATH_MAX:
        raise SocketPathError(f"unix socket path {path} is {size} bytes long; the limit is {UNIX_SOCKET_PATH_MAX} "
                              "(use a shorter root, registry or plugins directory)")
