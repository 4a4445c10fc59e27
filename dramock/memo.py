"""Bounded memo tables: what lets repeated work (the same field set, the same spec, the same expression) be
done once. Plain dicts, read without a lock; `remember` adds an entry, and a full table drops its oldest
quarter (insertion order). It takes a lock: a big request is prepared in a worker thread while the event
loop's thread writes to the same tables."""

from __future__ import annotations

import threading
from typing import Any

_lock = threading.Lock()

# The create memos (a create's field set, validation and type check of content seen before): entries per
# table, and the largest content (JSON bytes) remembered; bigger content is computed each time.
CONTENT_ENTRIES = 1024
CONTENT_BYTES = 16 * 1024


def remember(cache: dict, key: Any, value: Any, limit: int) -> None:
    with _lock:
        if len(cache) >= limit:
            for old in list(cache)[: max(1, limit // 4)]:
                cache.pop(old, None)
        cache[key] = value
