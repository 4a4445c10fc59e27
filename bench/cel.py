"""CEL selector evaluation speed over a 4,000-device set: interpreted vs compiled vs cached.

    python bench/cel.py [--devices 4000] [--passes 3]

Rows:
  celpy interpreted   cel-python 0.5 InterpretedRunner (tree walking), the reference point
  celpy compiled      cel-python 0.5 CompiledRunner (transpiled to Python source)
  dramock compiled    dramock.cel: checked AST compiled to closures (what the allocator calls)
  dramock cached      dramock.cel.evaluate_cached hits, keyed by (expression, device identity)
celpy cannot run the Kubernetes libraries (quantity, semver) nor check types, so its rows use a plain
attribute selector; the dramock rows also time the library-heavy selectors the KEPs use. Every row
checks that it selects the same devices.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from dramock import cel  # after the sys.path line: runs from a checkout

DRIVER = "gpu.example.com"
MODELS = ["a100", "h100", "l4", "t4"]
PLAIN = (f'device.driver == "{DRIVER}" && device.attributes["{DRIVER}"].model == "h100" '
         f'&& device.attributes["{DRIVER}"].cores >= 64 && !device.attributes["{DRIVER}"].mig')
LIBRARY = [
    ("quantity", f'device.capacity["{DRIVER}"].memory.isGreaterThan(quantity("32Gi"))'),
    ("semver", f'device.attributes["{DRIVER}"].driverVersion.isGreaterThan(semver("1.2.0"))'),
    ("cel.bind + in", (f'cel.bind(g, device.attributes["{DRIVER}"], g.model in ["a100", "h100"] && g.index < 4 '
                       f'&& g.driverVersion.isGreaterThan(semver("1.1.0")))')),
    ("exists over names", f'device.attributes["{DRIVER}"].exists(n, n.startsWith("numa"))'),
]


def wire_devices(n: int) -> list[tuple[tuple[str, str], dict]]:
    out = []
    for i in range(n):
        out.append(((f"slice-{i // 8}", f"gpu-{i % 8}"), {
            "name": f"gpu-{i % 8}",
            "attributes": {
                "model": {"string": MODELS[i % len(MODELS)]},
                "cores": {"int": 32 * (1 + i % 4)},
                "index": {"int": i % 8},
                "mig": {"bool": i % 3 == 0},
                "numaNode": {"int": i % 2},
                "driverVersion": {"version": f"1.{i % 4}.{i % 7}"},
                "pcieRoot": {"string": f"pci0000:{i % 16:02x}"},
            },
            "capacity": {"memory": {"value": ["16Gi", "40Gi", "80Gi", "24Gi"][i % 4]},
                         "cores": {"value": str(32 * (1 + i % 4))}},
        }))
    return out


def timed(label: str, n: int, fn) -> list:
    gc.collect()
    gc.disable()  # a full collection over the celpy contexts would land in whichever row runs then
    try:
        start = time.perf_counter()
        results = fn()
        dt = time.perf_counter() - start
    finally:
        gc.enable()
    print(f"  {label:<34} {n / dt:>12,.0f} evals/s {dt / n * 1e6:>10.2f} µs/eval")
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--devices", type=int, default=4000)
    ap.add_argument("--passes", type=int, default=3, help="passes over the device set for the fast rows")
    args = ap.parse_args()

    wire = wire_devices(args.devices)
    start = time.perf_counter()
    envs = [(key, cel.device_env(DRIVER, dev)) for key, dev in wire]
    dt = time.perf_counter() - start
    print(f"{args.devices} devices; device_env: {dt / args.devices * 1e6:.2f} µs/device")

    cel.clear_caches()
    start = time.perf_counter()
    compiled = cel.compile(PLAIN)
    print(f"compile (cold, parse+check+estimate+closures): {(time.perf_counter() - start) * 1e3:.2f} ms; "
          f"cached compile: ", end="")
    start = time.perf_counter()
    for _ in range(10000):
        cel.compile(PLAIN)
    print(f"{(time.perf_counter() - start) / 10000 * 1e6:.2f} µs; estimated max cost {compiled.max_cost}")

    print(f"\nselector: {PLAIN}")
    expected = None
    try:
        import celpy
        from celpy import celtypes

        def celpy_context(dev: dict) -> dict:
            attrs: dict = {}
            for name, attr in dev["attributes"].items():
                value = next(iter(attr.values()))
                attrs.setdefault(DRIVER, {})[name] = value
            return {"device": celpy.json_to_cel({"driver": DRIVER, "attributes": attrs, "capacity": {}})}

        contexts = [celpy_context(dev) for _, dev in wire]
        for label, runner in (("celpy interpreted", celpy.InterpretedRunner),
                              ("celpy compiled", celpy.CompiledRunner)):
            celpy.CELParser.CEL_PARSER = None  # the parser is cached per tree class
            env = celpy.Environment(runner_class=runner)
            prog = env.program(env.compile(PLAIN))
            results = timed(label, len(contexts), lambda prog=prog: [bool(prog.evaluate(c)) for c in contexts])
            assert all(isinstance(r, bool) for r in results)
            if expected is None:
                expected = results
            assert results == expected, f"{label} disagrees"
            _ = celtypes  # keep the import explicit for readers
    except ImportError:  # pragma: no cover
        print("  (cel-python not installed: no celpy rows)")

    n = len(envs) * args.passes
    results = timed("dramock compiled", n, lambda: [compiled.evaluate(e) for _ in range(args.passes) for _, e in envs])
    if expected is not None:
        assert results[:len(envs)] == expected, "dramock disagrees with celpy"
    for key, e in envs:  # warm the cache
        cel.evaluate_cached(compiled, key, e)
    results = timed("dramock cached (hits)", n, lambda: [
        compiled.evaluate_cached(key, e) for _ in range(args.passes) for key, e in envs])
    if expected is not None:
        assert results[:len(envs)] == expected
    print(f"  matching devices: {sum(results[:len(envs)])} of {len(envs)}")

    for title, expr in LIBRARY:
        ce = cel.compile(expr)
        print(f"\nselector ({title}, max cost {ce.max_cost}): {expr}")
        results = timed("dramock compiled", n, lambda ce=ce: [
            _safe(ce, e) for _ in range(args.passes) for _, e in envs])
        for key, e in envs:
            _safe_cached(ce, key, e)
        timed("dramock cached (hits)", n, lambda ce=ce: [
            _safe_cached(ce, key, e) for _ in range(args.passes) for key, e in envs])
        print(f"  matching devices: {sum(r is True for r in results[:len(envs)])} of {len(envs)}")


def _safe(ce: cel.CompiledExpression, env: dict):
    try:
        return ce.evaluate(env)
    except cel.CELRuntimeError:
        return None


def _safe_cached(ce: cel.CompiledExpression, key, env: dict):
    try:
        return ce.evaluate_cached(key, env)
    except cel.CELRuntimeError:
        return None


if __name__ == "__main__":
    main()
