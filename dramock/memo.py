"""Bounded memo tables: what lets repeated work (the same field set, the same spec, the same expression) be
done once. Plain dicts, read without a lock; `remember` adds an entry, and a full table drops its oldest
quarter (insertion order). It takes a lock: a big request is prepared in a worker thread while the event
loop's thread writes to the same tables."""

from __future__ import annotations

import threading
from typing import Any

_lock = threading.Lock()


def remember(cache: dict, key: Any, value: Any, limit: int) -> None:
    with _lock:
        if len(cache) >= limit:
            for old in list(cache)[: max(1, limit // 4)]:
                cache.pop(old, None)
        cache[key] = value
