"""``simcore bench --save FILE``: the report as a file, and that file as the documentation's speed table.

The speed tables of the documentation are read from the file ``make bench``
writes (``bench/results.json``), never copied by hand: a number in the docs
is the number a run printed, with the date, the command and the machine's
load it was measured under beside it.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import time
from pathlib import Path
from typing import Any

from simcore.bench.runs import BenchOptions
from simcore.version import code_version

#: The bump when the saved file's layout changes; :func:`markdown` refuses a file of another layout.
FORMAT = 1


def command(opts: BenchOptions) -> str:
    """The ``simcore bench`` command line that measures ``opts`` (the options that differ from the defaults)."""
    words = ["simcore", "bench"]
    for f in dataclasses.fields(BenchOptions):
        value = getattr(opts, f.name)
        if value == f.default:
            continue
        flag = "--" + f.name.replace("_", "-")
        words += [flag] if value is True else [flag, str(value)]
    return shlex.join(words)


def save(report: dict[str, Any], path: str | Path, opts: BenchOptions) -> Path:
    """Write ``report`` (``simcore bench``'s, as ``--json`` prints it) with what it was measured on."""
    doc = {
        "format": FORMAT,
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": command(opts),
        "code_version": code_version(),
        **report,
    }
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    tmp.replace(out)  # a reader never sees half a file
    return out


def _num(x: Any, digits: int = 0) -> str:
    return "" if x is None else f"{x:,.{digits}f}"


def _runs_table(results: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| scenario | scheduler | engine | machines | jobs | jobs / s | jobs / CPU s | compile s | peak MB | status |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        if r.get("status") == "error":
            lines.append(f"| {r['scenario']} | {r['scheduler']} | | | | | | | | error: {r.get('error', '')} |")
            continue
        lines.append(
            f"| {r['scenario']} | {r.get('label', r['scheduler'])} "
            f"| {r.get('engine', '')} | {_num(r.get('machines'))} | {_num(r.get('jobs'))} "
            f"| {_num(r.get('jobs_per_s'))} | {_num(r.get('jobs_per_cpu_s'))} | {_num(r.get('compile_s'), 1)} "
            f"| {_num(r.get('peak_rss_mb'))} | {r.get('status', '')} |"
        )
    return lines


def _flat(prefix: str, value: Any) -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        return [kv for k, v in value.items() for kv in _flat(f"{prefix}.{k}" if prefix else k, v)]
    return [(prefix, value)]


def markdown(doc: dict[str, Any]) -> str:
    """The saved report as Markdown: the runs' table, the other scenarios' figures, how it was measured."""
    if doc.get("format") != FORMAT:
        raise ValueError(f"bench results of format {doc.get('format')!r}; this code reads format {FORMAT}")
    load_b = ", ".join(f"{x:.2f}" for x in doc["load_average_before"])
    load_a = ", ".join(f"{x:.2f}" for x in doc["load_average_after"])
    lines = [
        f"Measured {doc['measured_at']} with `{doc['command']}` (code {doc['code_version']}, Python "
        f"{doc['python']}, {doc['cpu_count']} CPUs; load average before {load_b}, after {load_a}).",
        "",
        *_runs_table(doc["results"]),
    ]
    policies = [(r["label"], r.get("scheduler_params", {}).get("policy", "")) for r in doc["results"] if "label" in r]
    if policies:
        lines += ["", "Staged policies:", ""] + [f"- `{label}`: `{policy}`" for label, policy in policies]
    for key in ("packing", "packing-continuous", "wfcommons", "explore"):
        if key in doc:
            lines += ["", f"`{key}`:", "", "| figure | value |", "|---|---|"]
            flat = _flat("", doc[key])
            lines += [f"| {k} | {v:,.4g} |" if isinstance(v, float) else f"| {k} | {v} |" for k, v in flat]
    return "\n".join(lines) + "\n"
