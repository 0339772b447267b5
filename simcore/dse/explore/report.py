"""The tables of a search: every generation's individuals and fitness, the elite per generation, as files.

The same rows back ``simcore explore --out DIR`` and the dashboard's CSV and
Parquet downloads, so both hold the same columns:

``generations.csv``: one row per individual per generation: ``generation``,
``individual`` (its place in the population), ``policy``, ``fitness``, the
four metric means, ``unfinished`` tasks and ``elite`` (1 for the elite).

``elites.csv``: one row per generation: the elite, its policy per stage,
fitness, metrics, and the explanation of a change of elite.

``search.json``: the settings, the summary and every generation with its
explanation.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from simcore.dse.explore.fitness import METRIC_NAMES, Evaluation
from simcore.dse.explore.search import GenerationRecord, SearchResult, stage_texts
from simcore.dse.staged.policy import STAGES, parse_policy

__all__ = ["ELITE_COLUMNS", "GENERATION_COLUMNS", "elite_rows", "generation_rows", "write_outputs"]

GENERATION_COLUMNS = ("generation", "individual", "policy", "fitness", *METRIC_NAMES, "unfinished", "elite")
ELITE_COLUMNS = (
    "generation",
    "policy",
    *STAGES,
    "fitness",
    *METRIC_NAMES,
    "unfinished",
    "new_evaluations",
    "explanation",
)


def generation_rows(
    records: Iterable[GenerationRecord], evaluations: Mapping[str, Evaluation]
) -> Iterator[dict[str, Any]]:
    """One row per individual per generation (:data:`GENERATION_COLUMNS`)."""
    for rec in records:
        for i, (policy, fit) in enumerate(zip(rec.individuals, rec.fitness, strict=True)):
            ev = evaluations[policy]
            yield {
                "generation": rec.index,
                "individual": i,
                "policy": policy,
                "fitness": fit,
                **{m: ev.metric(m) for m in METRIC_NAMES},
                "unfinished": ev.unfinished,
                "elite": int(i == rec.elite),
            }


def elite_rows(records: Iterable[GenerationRecord], evaluations: Mapping[str, Evaluation]) -> Iterator[dict[str, Any]]:
    """One row per generation: its elite (:data:`ELITE_COLUMNS`)."""
    for rec in records:
        ev = evaluations[rec.elite_policy]
        yield {
            "generation": rec.index,
            "policy": rec.elite_policy,
            **stage_texts(parse_policy(rec.elite_policy)),
            "fitness": rec.elite_fitness,
            **{m: ev.metric(m) for m in METRIC_NAMES},
            "unfinished": ev.unfinished,
            "new_evaluations": rec.new_evaluations,
            "explanation": rec.explanation.text() if rec.explanation is not None else "",
        }


def _write_csv(path: Path, columns: tuple[str, ...], rows: Iterable[Mapping[str, Any]]) -> None:
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(columns), lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: repr(v) if isinstance(v, float) else v for k, v in r.items()})


def write_outputs(result: SearchResult, out_dir: str | Path, meta: Mapping[str, Any]) -> list[Path]:
    """Write ``generations.csv``, ``elites.csv`` and ``search.json`` into ``out_dir``; returns the paths."""
    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    gens = d / "generations.csv"
    _write_csv(gens, GENERATION_COLUMNS, generation_rows(result.generations, result.evaluations))
    elites = d / "elites.csv"
    _write_csv(elites, ELITE_COLUMNS, elite_rows(result.generations, result.evaluations))
    js = d / "search.json"
    js.write_text(
        json.dumps(
            {
                **dict(meta),
                "summary": result.summary(),
                "generations": [g.to_dict() for g in result.generations],
                "evaluations": {p: e.to_dict() for p, e in result.evaluations.items()},
            },
            indent=1,
        )
    )
    return [gens, elites, js]
