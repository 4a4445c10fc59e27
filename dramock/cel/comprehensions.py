"""The comprehension runners the compiler builds for expanded macros: all, exists, exists_one, map, filter
and the two-variable transformList, transformMap and transformMapEntry, each charging its per-iteration
cost to the activation."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dramock.cel.activation import Closure, checkpoint
from dramock.cel.errors import CELCostExceeded, CELRuntimeError
from dramock.cel.operators import iterable, iterable_pairs, no_overload


def _absorbable(e: CELRuntimeError) -> bool:
    return type(e) is not CELCostExceeded


def _quantifier(stop_on: bool, op: str) -> Callable[..., Closure]:
    """`all` (stops on false, like a chain of &&) and `exists` (stops on true, like ||), with CEL's rule
    that a deciding value wins over errors met on other elements."""
    def make(rng: Closure, a: int, b: int | None, pred: Closure, body: Any, ic: int) -> Closure:
        def run(s: list) -> bool:
            err = None
            for x in (iterable(rng(s)) if b is None else iterable_pairs(rng(s))):
                if b is None:
                    s[a] = x
                else:
                    s[a], s[b] = x
                s[0] += ic
                if s[0] > s[1]:
                    checkpoint(s)
                try:
                    v = pred(s)
                except CELRuntimeError as e:
                    if not _absorbable(e):
                        raise
                    err = err or e
                    continue
                if v is stop_on:
                    return stop_on
                if v is not (not stop_on):
                    err = err or no_overload(op, not stop_on, v)
            if err is not None:
                raise err
            return not stop_on
        return run
    return make


_loop_all = _quantifier(False, "_&&_")
_loop_exists = _quantifier(True, "_||_")


def _loop_exists_one(rng: Closure, a: int, b: int | None, pred: Closure, body: Any, ic: int) -> Closure:
    def exists_one(s: list) -> bool:
        count = 0
        for x in (iterable(rng(s)) if b is None else iterable_pairs(rng(s))):
            if b is None:
                s[a] = x
            else:
                s[a], s[b] = x
            s[0] += ic
            if s[0] > s[1]:
                checkpoint(s)
            v = pred(s)
            if v is True:
                count += 1
            elif v is not False:
                raise no_overload("_?_:_", v)
        return count == 1
    return exists_one


def _test(v: Any) -> bool:
    if v is True or v is False:
        return v
    raise no_overload("_?_:_", v)


def _loop_map(rng: Closure, a: int, b: int | None, pred: Closure | None, body: Closure, ic: int) -> Closure:
    def map_(s: list) -> list:
        out = []
        for x in iterable(rng(s)):
            s[a] = x
            s[0] += ic
            if s[0] > s[1]:
                checkpoint(s)
            if pred is None or _test(pred(s)):
                out.append(body(s))
        return out
    return map_


def _loop_filter(rng: Closure, a: int, b: int | None, pred: Closure, body: Any, ic: int) -> Closure:
    def filter_(s: list) -> list:
        out = []
        for x in iterable(rng(s)):
            s[a] = x
            s[0] += ic
            if s[0] > s[1]:
                checkpoint(s)
            if _test(pred(s)):
                out.append(x)
        return out
    return filter_


def _loop_transform_list(rng: Closure, a: int, b: int, pred: Closure | None, body: Closure, ic: int) -> Closure:
    def transform_list(s: list) -> list:
        out = []
        for x in iterable_pairs(rng(s)):
            s[a], s[b] = x
            s[0] += ic
            if s[0] > s[1]:
                checkpoint(s)
            if pred is None or _test(pred(s)):
                out.append(body(s))
        return out
    return transform_list


def _loop_transform_map(rng: Closure, a: int, b: int, pred: Closure | None, body: Closure, ic: int) -> Closure:
    def transform_map(s: list) -> dict:
        out = {}
        for x in iterable_pairs(rng(s)):
            s[a], s[b] = x
            s[0] += ic
            if s[0] > s[1]:
                checkpoint(s)
            if pred is None or _test(pred(s)):
                out[x[0]] = body(s)
        return out
    return transform_map


def _loop_transform_map_entry(rng: Closure, a: int, b: int, pred: Closure | None, body: Closure, ic: int) -> Closure:
    def transform_map_entry(s: list) -> dict:
        out: dict = {}
        for x in iterable_pairs(rng(s)):
            s[a], s[b] = x
            s[0] += ic
            if s[0] > s[1]:
                checkpoint(s)
            if pred is None or _test(pred(s)):
                entry = body(s)
                if not isinstance(entry, dict):
                    raise no_overload("transformMapEntry", entry)
                for k, v in entry.items():
                    if k in out:
                        raise CELRuntimeError(f"insert failed: key {k} already exists")
                    out[k] = v
        return out
    return transform_map_entry


LOOP_BUILDERS: dict[str, Callable[..., Closure]] = {
    "all": _loop_all, "exists": _loop_exists, "exists_one": _loop_exists_one, "map": _loop_map,
    "filter": _loop_filter, "transformList": _loop_transform_list, "transformMap": _loop_transform_map,
    "transformMapEntry": _loop_transform_map_entry,
}
