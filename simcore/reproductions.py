"""One-click reproductions of the papers' figures: a grid at a scale the user picks, and what the paper reports.

Each :class:`Reproduction` builds a :class:`simcore.sweep.Sweep` from a few
scale knobs (machines per configuration, hours, seeds...), so the dashboard
runs exactly the grid ``simcore sweep`` runs (:meth:`Reproduction.command`
prints it). Beside our numbers the result page shows what the paper reports,
read from its text (:class:`PaperValue`); where the paper gives only a
figure, :attr:`Reproduction.figure_only` says so. Why we differ is one line
of each scheduler's docstring, the paragraph that starts with
``Versus the paper:`` (:func:`paper_difference`).

LoTES (Rahman, Down, Mahmood et al., "LoTES: multistage resource-aware
scheduling"), section 5.4:

* Figure 10 is the Google trace's queue over a month (section 5.3.3): here
  ``google-like`` on Table 1's cluster, scaled.
* Figure 11: mean response against Phi = 0, 0.003, ..., 0.015 at
  lambda = 0.97 of the machine-assignment LP's lambda* (``load_basis=
  "assignment"``), five instances (seeds) a point, 1,000 machines per
  configuration, 100 hours. The paper draws it with a log axis.
* Figures 12 and 13: Omega sweeps at loads 0.90 and 0.95, the Phi instance's
  requests fixed (``class_seed`` 0, Phi 0.006, see ``lotes-omega``), omega
  drawn per instance. The text does not list the Omega values it tested; we
  use 0 to 0.2 in steps of 0.05 (it reports Tetris only for Omega <= 0.1 at
  0.95 because it was unstable beyond).

The profile study (Kontothanassis and Goddeau, HPL-2004-192), Figures 12-13:
average completion time split into queue wait and run time per scheduler,
for the heterogeneous and the homogeneous cluster (an axis over the cluster
preset), on the full trace (Figure 12) and the blastn/blastp trace (Figure
13), over ten generated traces (seeds 0-9).
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from simcore.core.errors import UnknownNameError
from simcore.presets import coerce_params
from simcore.presets.google import ASSIGNMENT_BASIS_MAX_BINS
from simcore.schedulers import SCHEDULERS
from simcore.schedulers.base import Param
from simcore.sweep import Sweep
from simcore.sweep.grammar import Axis
from simcore.sweep.report import Row

#: The marker of the docstring paragraph a reproduction page quotes.
DIFFERENCE_MARK = "Versus the paper:"


@dataclass(frozen=True)
class PaperValue:
    """What the paper reports for one scheduler (at one point of the grid, or for the whole figure).

    ``relative``: the paper's change of the metric against ``Reproduction.baseline`` in percent (+13.0 is
    13% worse), when its text gives a number; ``text``: the paper's words, with where they are.
    """

    scheduler: str
    text: str
    point: Mapping[str, Any] | None = None
    relative: float | None = None


@dataclass(frozen=True)
class Reproduction:
    """A figure of a paper as a grid at a chosen scale, with the paper's own findings."""

    name: str
    paper: str
    figure: str
    title: str
    #: The knobs the user picks; their defaults are a quick scale, their help says the paper's.
    scale: tuple[Param, ...]
    build: Callable[[dict[str, Any]], Sweep]
    metric: str
    #: "line" (metric against the first axis), "stacked" (wait and run bars per scheduler) or "bars".
    chart: str
    log_y: bool
    #: What the paper says about the figure as a whole (section and finding).
    summary: str
    figure_only: bool
    values: tuple[PaperValue, ...] = ()
    #: The scheduler ``PaperValue.relative`` is against (the profile study's FCFS).
    baseline: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def label(self) -> str:
        """The figure with its paper's short name ("LoTES Figure 12"): both papers have a Figure 12 and 13."""
        return f"{self.paper.split(':')[0].split(' (')[0].split(' on ')[0]} {self.figure}"

    def difference(self, scheduler: str) -> str | None:
        """:func:`paper_difference` of ``scheduler`` when it concerns this figure.

        A line that names figures ("on the Phi sweep (Figure 11)", "Figures 12-13") belongs on those
        figures' pages only: Figure 10's page must not say what differs on Figure 11.
        """
        line = paper_difference(scheduler)
        if not line:
            return None
        named: set[int] = set()
        for first, last in re.findall(r"Figures? (\d+)(?:-(\d+))?", line):
            named.update(range(int(first), int(last or first) + 1))
        number = re.search(r"\d+", self.figure)
        if named and number is not None and int(number.group()) not in named:
            return None
        return line

    def scale_values(self, given: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The scale knobs, checked (ParameterError naming the bad one), defaults filled in."""
        return coerce_params(f"reproduction {self.name!r}", self.scale, dict(given or {}))

    def sweep(self, given: Mapping[str, Any] | None = None) -> Sweep:
        return self.build(self.scale_values(given))

    def command(self, given: Mapping[str, Any] | None = None) -> str:
        """The ``simcore sweep`` command that prints this grid's table."""
        return self.sweep(given).command_line(
            table=True, metric=None if self.metric == "mean_response_s" else self.metric
        )


#: Every reproduction by name, in the order the pages list them.
REPRODUCTIONS: dict[str, Reproduction] = {}


def _register(r: Reproduction) -> Reproduction:
    REPRODUCTIONS[r.name] = r
    return r


def _seeds(n: int) -> list[int]:
    return list(range(n))


def paper_difference(scheduler: str) -> str | None:
    """The one line of a scheduler's docstring (class, else module) on where and why it differs from its paper."""
    cls = SCHEDULERS.get(scheduler)
    for doc in (inspect.getdoc(cls), inspect.getdoc(inspect.getmodule(cls))):
        if not doc:
            continue
        for para in doc.split("\n\n"):
            text = " ".join(line.strip() for line in para.strip().splitlines())
            text = text.lstrip("*- ").strip()
            if text.startswith(DIFFERENCE_MARK):
                return text[len(DIFFERENCE_MARK) :].strip().replace("``", "")
    return None


# -- comparing ours with the paper --------------------------------------------------------------------------


@dataclass(frozen=True)
class Comparison:
    """One line of the result page's table: the paper's report and ours for a scheduler (at a point).

    A paper value about the whole figure (no point) gets one line over all the scheduler's points:
    ``ours`` then gives our mean at each point, ``point`` is empty.
    """

    scheduler: str
    point: dict[str, Any]
    paper: str
    paper_relative: float | None
    ours: str
    ours_mean: float | None
    ours_relative: float | None
    ours_unstable: int
    ours_runs: int


def _matches(point: Mapping[str, Any], want: Mapping[str, Any] | None) -> bool:
    return want is None or all(point.get(k) == v for k, v in want.items())


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.4g}"


def compare(rep: Reproduction, rows: Sequence[Row]) -> list[Comparison]:
    """The paper's values beside ours, for every aggregated row a paper value speaks about.

    ``ours_relative`` is the change of the row's mean against the baseline scheduler's mean at the same
    point, in percent, when the reproduction has a baseline.
    """
    base: dict[str, float | None] = {}
    if rep.baseline is not None:
        for r in rows:
            if r.scheduler == rep.baseline:
                base[repr(sorted(r.point.items()))] = r.mean
    out = []
    for pv in rep.values:
        mine = [r for r in rows if r.scheduler == pv.scheduler and _matches(r.point, pv.point)]
        if not mine:
            continue
        if pv.point is None:
            means = "; ".join(
                f"{', '.join(f'{k}={v}' for k, v in r.point.items()) or 'all'}: {_num(r.mean)}" for r in mine
            )
            out.append(
                Comparison(
                    scheduler=pv.scheduler,
                    point={},
                    paper=pv.text,
                    paper_relative=pv.relative,
                    ours=means,
                    ours_mean=None,
                    ours_relative=None,
                    ours_unstable=sum(r.unstable for r in mine),
                    ours_runs=sum(r.runs for r in mine),
                )
            )
            continue
        for r in mine:
            b = base.get(repr(sorted(r.point.items())))
            rel = None
            if rep.baseline is not None and b is not None and r.mean is not None and b > 0:
                rel = 100.0 * (r.mean - b) / b
            out.append(
                Comparison(
                    scheduler=r.scheduler,
                    point=dict(r.point),
                    paper=pv.text,
                    paper_relative=pv.relative,
                    ours=_num(r.mean),
                    ours_mean=r.mean,
                    ours_relative=rel,
                    ours_unstable=r.unstable,
                    ours_runs=r.runs,
                )
            )
    return out


# -- LoTES ----------------------------------------------------------------------------------------------------

LOTES_PAPER = "LoTES: multistage resource-aware scheduling (section 5)"
LOTES_SCHEDULERS = ["lotes", "tetris", "greedy"]
PHI_VALUES = (0.0, 0.003, 0.006, 0.009, 0.012, 0.015)
OMEGA_VALUES = (0.0, 0.05, 0.1, 0.15, 0.2)

_MPC = Param("machines_per_config", int, 20, "machines in each of the 10 configurations (paper: 1000)", min=1)
#: The Omega figures' quick scale: 50 machines make queues form at loads 0.90-0.95 (at 200 every wait was 0).
_MPC_OMEGA = Param("machines_per_config", int, 5, "machines in each of the 10 configurations (paper: 1000)", min=1)
_SEEDS5 = Param("seeds", int, 5, "instances (seeds) per point (paper: 5)", min=1, max=50)
_CV = Param(
    "request_cv",
    float,
    0.5,
    "per-job request variability around the class mean (paper: 0.5; 0 gives every job its class mean)",
    min=0.0,
    max=10.0,
)


#: The rate reading of the Omega figures. The text's mu_jk = u_k omega_jk makes class k's mean time
#: 1 / (u_k omega_jk) hours, 50 h on average on the class_seed 0 instance (and without a finite mean over
#: instances, u_k being uniform on (0, 1]): no window short of thousands of hours fills the cluster, and at
#: 20 machines per configuration and 25 h every wait was 0. The quick scale reads it as omega_jk / u_k,
#: section 5.4.2's rate times omega (jobs of half an hour), where the Omega effect shows; the knob keeps the
#: literal reading one change away.
_MU_FORM = Param(
    "mu_form",
    str,
    "omega_over_u",
    "processing rate: omega_over_u (the quick scale's: section 5.4.2's rate 1/u_k times omega) or "
    "u_times_omega (the text's mu_jk = u_k omega_jk: jobs of about 50 h on this instance, no queue in any "
    "feasible window)",
    choices=("omega_over_u", "u_times_omega"),
)


def _hours(default: float, paper: float) -> Param:
    return Param("hours", float, default, f"simulated hours of arrivals (paper: {paper:g})", min=0.01, max=24 * 365)


def _lotes_sweep(workload: str, load: float, axis: Axis, extra: dict[str, Any]) -> Callable[[dict[str, Any]], Sweep]:
    def build(s: dict[str, Any]) -> Sweep:
        # LoTES's bin guard as high as the load basis's: a few instances need over a million candidate bins.
        params: dict[str, Any] = {
            "machines_per_config": s["machines_per_config"],
            "load_basis": "assignment",
            "max_bins": ASSIGNMENT_BASIS_MAX_BINS,
        }
        if s["request_cv"] != 0.5:
            params["request_cv"] = s["request_cv"]
        if s.get("mu_form", "u_times_omega") != "u_times_omega":  # the workload's own default left out
            params["mu_form"] = s["mu_form"]
        params.update(extra)
        return Sweep(
            cluster="google-balanced",
            workload=workload,
            schedulers=list(LOTES_SCHEDULERS),
            seeds=_seeds(s["seeds"]),
            axes=[axis],
            load=load,
            hours=s["hours"],
            params=params,
        )

    return build


def _fig10(s: dict[str, Any]) -> Sweep:
    return Sweep(
        cluster="google-2011",
        workload="google-like",
        schedulers=list(LOTES_SCHEDULERS),
        seeds=_seeds(s["seeds"]),
        load=s["load"],
        hours=s["hours"],
        params={"scale": s["scale"]},
    )


_register(
    Reproduction(
        name="lotes-fig10",
        paper=LOTES_PAPER,
        figure="Figure 10",
        title="Jobs in queue over time, Google cluster (Table 1) and workload (Table 2)",
        scale=(
            Param("scale", float, 0.01, "fraction of Table 1's 12,583 machines (paper: 1)", min=0.0001, max=1.0),
            _hours(2.0, 720),
            Param("load", float, 0.9, "arrival rate as a fraction of lambda* (the trace's own rate in the paper)"),
            Param("seeds", int, 1, "seeds (paper: the one trace)", min=1, max=50),
        ),
        build=_fig10,
        metric="max_queue_len",
        chart="bars",
        log_y=False,
        summary="Section 5.3.3: over the month the queue does not grow to any significant degree for LoTES; "
        "Tetris forms a queue at some points, but a small one; Greedy has increased queue lengths at all points.",
        figure_only=True,
        values=(
            PaperValue("lotes", "queue does not grow to any significant degree (section 5.3.3)"),
            PaperValue("tetris", "a queue forms at some points, relatively small (section 5.3.3)"),
            PaperValue("greedy", "increased queue lengths at all points (section 5.3.3)"),
        ),
        notes=(
            "The paper replays the month-long trace (with its initial batch of jobs); google-like is a "
            "stationary stand-in with Table 2's class statistics, so there is no early burst.",
        ),
    )
)

_register(
    Reproduction(
        name="lotes-fig11",
        paper=LOTES_PAPER,
        figure="Figure 11",
        title="Mean wait until start (the paper's response time) against Phi (varying resource requirements), "
        "load 0.97 of the assignment LP",
        scale=(_MPC, _hours(25.0, 100), _SEEDS5, _CV),
        build=_lotes_sweep("lotes-phi", 0.97, Axis("phi", PHI_VALUES), {}),
        metric="mean_response_s",
        chart="line",
        log_y=True,
        summary="Section 5.4.2: at Phi = 0 both LoTES and Tetris have short response times; as Phi grows both "
        "get longer and Tetris becomes much worse than LoTES. Greedy is not stable at this load and is not shown.",
        figure_only=True,
        values=(
            PaperValue("lotes", "short at Phi = 0, grows with Phi, well below Tetris (Figure 11, section 5.4.2)"),
            PaperValue("tetris", "short at Phi = 0, grows with Phi, 'much worse than LoTES' (section 5.4.2)"),
            PaperValue("greedy", "not stable at 0.97: 'queue sizes increase unboundedly' (section 5.4.2)"),
        ),
        notes=(
            "request_cv 0.5 is the paper's request model; set it to 0 to see the paper's ordering "
            "(see 'where we differ' below).",
        ),
    )
)

_OMEGA_EXTRA = {"phi": 0.006, "class_seed": 0}
_OMEGA_NOTES = (
    "The paper's text does not list its Omega values; we use 0 to 0.2 in steps of 0.05.",
    "mu_form omega_over_u is the quick scale's reading of the rates (jobs of half an hour): with the text's "
    "u_times_omega jobs run about 50 hours on this instance and no queue forms in any window this page can run.",
    "request_cv 0.5 is the paper's request model: there Tetris starts every job at once and LoTES's wait grows "
    "with Omega, as on the Phi sweep; set it to 0 to see the paper's ordering (see 'where we differ' below).",
)
_register(
    Reproduction(
        name="lotes-fig12",
        paper=LOTES_PAPER,
        figure="Figure 12",
        title="Mean wait until start (the paper's response time) against Omega (machine-dependent processing "
        "times), load 0.90",
        scale=(_MPC_OMEGA, _hours(50.0, 100), _SEEDS5, _CV, _MU_FORM),
        build=_lotes_sweep("lotes-omega", 0.90, Axis("omega", OMEGA_VALUES), _OMEGA_EXTRA),
        metric="mean_response_s",
        chart="line",
        log_y=False,
        summary="Section 5.4.3, load 0.90: LoTES starts essentially all jobs immediately; Tetris does at "
        "Omega = 0, then its mean response increases continually with Omega. Greedy is not stable.",
        figure_only=True,
        values=(
            PaperValue("lotes", "essentially every job starts immediately, for every Omega (section 5.4.3)"),
            PaperValue("tetris", "no wait at Omega = 0, then a continual increase with Omega (section 5.4.3)"),
            PaperValue("greedy", "not stable at this load, not shown (section 5.4.3)"),
        ),
        notes=_OMEGA_NOTES,
    )
)

_register(
    Reproduction(
        name="lotes-fig13",
        paper=LOTES_PAPER,
        figure="Figure 13",
        title="Mean wait until start (the paper's response time) against Omega (machine-dependent processing "
        "times), load 0.95",
        scale=(_MPC_OMEGA, _hours(50.0, 100), _SEEDS5, _CV, _MU_FORM),
        build=_lotes_sweep("lotes-omega", 0.95, Axis("omega", OMEGA_VALUES), _OMEGA_EXTRA),
        metric="mean_response_s",
        chart="line",
        log_y=False,
        summary="Section 5.4.3, load 0.95: LoTES no longer starts every job at once and, like Tetris, its "
        "response time grows rapidly with Omega; Tetris looks unstable beyond Omega = 0.1 (reported only up "
        "to 0.1). Greedy is not stable.",
        figure_only=True,
        values=(
            PaperValue("lotes", "rapid growth with Omega, below Tetris (section 5.4.3)"),
            PaperValue("tetris", "rapid growth with Omega, unstable beyond Omega = 0.1 (section 5.4.3)"),
            PaperValue("greedy", "not stable at this load, not shown (section 5.4.3)"),
        ),
        notes=_OMEGA_NOTES,
    )
)

# -- the profile study ------------------------------------------------------------------------------------------

PROFILE_PAPER = "Profile-driven scheduling on a heterogeneous cluster (HPL-2004-192, section 5)"
PROFILE_SCHEDULERS = ["fcfs", "affinity", "greedy1", "greedy2", "greedy3"]
HETERO, HOMO = "ncbi-heterogeneous", "ncbi-homogeneous"

_PROFILE_SCALE = (
    Param(
        "seeds", int, 3, "generated traces (paper: ten; three show the effect in a third of the time)", min=1, max=50
    ),
    _hours(25.0, 25),
    Param(
        "machines_per_type",
        int,
        0,
        "machines of each type; 0: the smallest size at which FCFS keeps up (the paper's sizing)",
        min=0,
        max=100_000,
    ),
)


def _profile(workload: str, sized_for: str) -> Callable[[dict[str, Any]], Sweep]:
    def build(s: dict[str, Any]) -> Sweep:
        params: dict[str, Any] = {"sized_for": sized_for}
        if s["machines_per_type"]:
            params["machines_per_type"] = s["machines_per_type"]
        return Sweep(
            cluster=HETERO,
            workload=workload,
            schedulers=list(PROFILE_SCHEDULERS),
            seeds=_seeds(s["seeds"]),
            axes=[Axis("cluster", (HETERO, HOMO))],
            hours=s["hours"],
            params=params,
        )

    return build


def _pv(cluster: str, scheduler: str, relative: float, text: str) -> PaperValue:
    return PaperValue(scheduler, text, {"cluster": cluster}, relative)


_register(
    Reproduction(
        name="profile-fig12",
        paper=PROFILE_PAPER,
        figure="Figure 12",
        title="Average job completion time (wait until start + run), full NCBI trace, heterogeneous and "
        "homogeneous clusters",
        scale=_PROFILE_SCALE,
        build=_profile("ncbi-blast", "full"),
        metric="mean_completion_s",
        chart="stacked",
        log_y=False,
        summary="Section 5: on the homogeneous cluster Affinity is 9.8% worse than FCFS, Greedy-1 is almost "
        "indistinguishable from FCFS and Greedy-2/3 improve by 4.6%; on the heterogeneous cluster Affinity is "
        "13% worse, Greedy-1 10.5% better and Greedy-2/3 19% better.",
        figure_only=False,
        baseline="fcfs",
        values=(
            _pv(HETERO, "affinity", 13.0, "13% worse than FCFS"),
            _pv(HETERO, "greedy1", -10.5, "10.5% better than FCFS"),
            _pv(HETERO, "greedy2", -19.0, "19% better than FCFS"),
            _pv(HETERO, "greedy3", -19.0, "19% better (tracks Greedy-2)"),
            _pv(HOMO, "affinity", 9.8, "9.8% worse than FCFS"),
            _pv(HOMO, "greedy1", 0.0, "almost indistinguishable from FCFS"),
            _pv(HOMO, "greedy2", -4.6, "4.6% better than FCFS"),
            _pv(HOMO, "greedy3", -4.6, "4.6% better (practically indistinguishable from Greedy-2)"),
        ),
    )
)

_register(
    Reproduction(
        name="profile-fig13",
        paper=PROFILE_PAPER,
        figure="Figure 13",
        title="Average job completion time (wait until start + run), blastn/blastp trace, heterogeneous and "
        "homogeneous clusters",
        scale=_PROFILE_SCALE,
        build=_profile("ncbi-blast-reduced", "reduced"),
        metric="mean_completion_s",
        chart="stacked",
        log_y=False,
        summary="Section 5: on the heterogeneous cluster Affinity improves on FCFS by about 2% and the greedy "
        "schedulers by 12%, 20% and 20%; on the homogeneous cluster Affinity and Greedy-2/3 improve by 6% and "
        "Greedy-1 tracks FCFS.",
        figure_only=False,
        baseline="fcfs",
        values=(
            _pv(HETERO, "affinity", -2.0, "about 2% better than FCFS"),
            _pv(HETERO, "greedy1", -12.0, "12% better than FCFS"),
            _pv(HETERO, "greedy2", -20.0, "20% better than FCFS"),
            _pv(HETERO, "greedy3", -20.0, "20% better than FCFS"),
            _pv(HOMO, "affinity", -6.0, "6% better than FCFS"),
            _pv(HOMO, "greedy1", 0.0, "no improvement: tracks FCFS"),
            _pv(HOMO, "greedy2", -6.0, "6% better than FCFS"),
            _pv(HOMO, "greedy3", -6.0, "6% better than FCFS"),
        ),
    )
)


def relative_text(x: float | None) -> str:
    """+13.0% / -4.6% / ~0%."""
    if x is None or not math.isfinite(x):
        return "-"
    return "~0%" if abs(x) < 0.05 else f"{x:+.1f}%"


def get(name: str) -> Reproduction:
    """A reproduction by name; an unknown name is an error listing the valid ones."""
    try:
        return REPRODUCTIONS[name]
    except KeyError:
        raise UnknownNameError("reproduction", name, REPRODUCTIONS) from None


__all__ = [
    "REPRODUCTIONS",
    "Comparison",
    "PaperValue",
    "Reproduction",
    "compare",
    "get",
    "paper_difference",
    "relative_text",
]
