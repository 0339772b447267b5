"""The progress line the commands print to stderr."""

from __future__ import annotations

import sys
from typing import Any


def progress_printer(label: str) -> Any:
    def show(p: Any) -> None:
        eta = ""
        if 0 < p.fraction < 1:
            eta = f", ETA {p.wall_s * (1 - p.fraction) / p.fraction:.0f}s"
        print(
            f"[{label}] {100 * p.fraction:5.1f}% simulated, {p.completed}/{p.jobs} jobs done{eta}",
            file=sys.stderr,
            flush=True,
        )

    return show
