"""Object UIDs: random (version 4) UUIDs, as kube-apiserver gives every object it creates.

`str(uuid.uuid4())` asks the kernel for 16 bytes and builds a UUID object for each one; the API server makes
one per create, so it takes random bytes for many at a time and formats them itself.
"""

from __future__ import annotations

import os

_BATCH = 256  # UIDs per read of the system's random source
_VERSION_4 = 0x0000_0000_0000_4000_8000_0000_0000_0000  # version 4, RFC 4122 variant
_KEEP = 0xFFFF_FFFF_FFFF_0FFF_3FFF_FFFF_FFFF_FFFF  # everything but the version and variant bits

_pool: list[int] = []


def new_uid() -> str:
    """A new random UUID in its canonical 8-4-4-4-12 form."""
    while True:
        try:
            n = _pool.pop()  # atomic: a big create prepared in the worker thread may take one at the same time
            break
        except IndexError:
            raw = os.urandom(16 * _BATCH)
            _pool.extend(int.from_bytes(raw[i:i + 16], "big") for i in range(0, len(raw), 16))
    h = "%032x" % (n & _KEEP | _VERSION_4)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


# A forked child must not hand out the UIDs its parent still holds.
os.register_at_fork(after_in_child=_pool.clear)
