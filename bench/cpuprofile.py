"""Run `python -m MODULE ARGS...` under cProfile timed by this process's CPU time (not wall time), so that
a profile taken on a busy shared machine shows where the CPU goes and not when the process was descheduled.

    python bench/cpuprofile.py OUT.prof MODULE [ARGS...]
"""

from __future__ import annotations

import cProfile
import runpy
import sys
import time


def main() -> None:
    out, module, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    sys.argv = [module, *args]
    prof = cProfile.Profile(time.process_time)
    prof.enable()
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    finally:
        prof.disable()
        prof.dump_stats(out)


if __name__ == "__main__":
    main()
