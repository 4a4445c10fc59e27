"""The activation every compiled closure receives: one list holding the running cost, the next checkpoint,
the cost limit, the wall-clock deadline, the device and the variable slots; and the cost charging that
enforces the runtime cost limit and the time budget."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from dramock.cel.errors import ACTUAL_COST_MESSAGE, CELCostExceeded

# Activation layout: [cost, next checkpoint, cost limit, deadline, device, variables...]
SLOT_COST, SLOT_NEXT_CHECK, SLOT_COST_LIMIT, SLOT_DEADLINE, SLOT_DEVICE = 0, 1, 2, 3, 4
FIRST_VARIABLE_SLOT = 5
CHECK_EVERY = 5000  # cost units between two wall-clock checks


def checkpoint(s: list) -> None:
    cost = s[SLOT_COST]
    if cost > s[SLOT_COST_LIMIT]:
        raise CELCostExceeded(ACTUAL_COST_MESSAGE, cost)
    deadline = s[SLOT_DEADLINE]
    if deadline is not None and time.perf_counter() > deadline:
        raise CELCostExceeded("operation interrupted: evaluation time budget exceeded", cost)
    s[SLOT_NEXT_CHECK] = min(cost + CHECK_EVERY, s[SLOT_COST_LIMIT])


def charge(s: list, cost: int) -> None:
    s[SLOT_COST] += cost
    if s[SLOT_COST] > s[SLOT_NEXT_CHECK]:
        checkpoint(s)


Closure = Callable[[list], Any]
