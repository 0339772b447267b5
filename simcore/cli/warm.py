"""Compile the built-in schedulers' kernels ahead of their first real run: ``python -m simcore.cli.warm``.

A scheduler's first compiled run compiles its kernel (8-13 CPU-s in a fresh process here, 40-95 s on a
busy one) and numba keeps the machine code in its disk cache (:mod:`simcore.compiled.jit`).
A dashboard worker starts this module in a background process when it comes up
(:mod:`dashboard.celery`), so that a researcher's first experiment loads the kernels from
the cache instead of compiling them; the worker takes tasks meanwhile. Each kernel is
compiled by a tiny run of its scheduler (a few dozen jobs) on a workload that provides what
it needs, through the same path as every run (:func:`simcore.api.run`), so the cached
code is exactly what a real run looks up.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from simcore.api import RunSpec, run
from simcore.schedulers import SCHEDULERS

#: The order kernels are compiled in: the schedulers a first experiment is likeliest to use come first,
#: so that the run it starts soonest finds its kernel in the cache soonest.
FIRST = ("greedy", "lotes", "tetris", "fcfs", "mris")

#: Tiny runs that reach each kernel: (cluster, workload, cluster parameters, hours). The profile
#: study's schedulers need a profile table, which only the NCBI workloads carry.
PLAIN: tuple[str, str, dict[str, Any], float] = ("google-balanced", "google-like", {"machines_per_config": 1}, 0.05)
PROFILE: tuple[str, str, dict[str, Any], float] = ("ncbi-heterogeneous", "ncbi-blast-reduced", {}, 0.05)


@dataclass(frozen=True)
class Warmed:
    """What warming one scheduler's kernel did."""

    scheduler: str
    #: "compiled" when the kernel ran (compiled now or loaded from the cache), else "python".
    engine: str
    #: Seconds of its first call (compiling, or loading from the cache); None when it has no kernel.
    compile_s: float | None


def schedulers_to_warm(names: Sequence[str] | None = None) -> list[str]:
    """The schedulers to warm, in order: ``names`` (checked against the registry) or every registered one."""
    known = SCHEDULERS.names()
    if names:
        unknown = [n for n in names if n not in known]
        if unknown:
            raise SystemExit(f"simcore.cli.warm: unknown scheduler(s) {', '.join(unknown)}; known: {known}")
        return list(dict.fromkeys(names))
    return [n for n in FIRST if n in known] + [n for n in known if n not in FIRST]


def warm_one(name: str) -> Warmed:
    """Run ``name`` once on a tiny scenario with the compiled engine; its kernel lands in the cache."""
    cluster, workload, params, hours = PROFILE if "profile" in SCHEDULERS.get(name).requires else PLAIN
    spec = RunSpec(cluster=cluster, workload=workload, scheduler=name, seed=0, hours=hours, cluster_params=params)
    extra = run(spec).result.extra
    compile_s = extra.get("compile_s")
    return Warmed(name, str(extra.get("engine")), None if compile_s is None else float(compile_s))


def warm(names: Sequence[str] | None = None, say: Callable[[str], None] = print) -> list[Warmed]:
    """Warm each scheduler's kernel in turn; a failure is reported and the others still warm."""
    out = []
    for name in schedulers_to_warm(names):
        t0 = time.perf_counter()
        try:
            w = warm_one(name)
        except Exception as e:  # a broken scheduler must not stop the others warming; its real runs will say why
            say(f"kernel warm-up: {name} failed: {e}")
            continue
        out.append(w)
        if w.engine == "compiled":
            say(f"kernel warm-up: {name} ready in {time.perf_counter() - t0:.1f} s (first call {w.compile_s:.1f} s)")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m simcore.cli.warm", description=__doc__.splitlines()[0])
    parser.add_argument("schedulers", nargs="*", help="schedulers to warm (default: every built-in one)")
    args = parser.parse_args(argv)
    warm(args.schedulers, say=lambda line: print(line, flush=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
