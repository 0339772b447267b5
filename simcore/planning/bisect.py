"""Bisection for the smallest size that meets a target, driven from outside one round at a time.

A :class:`Search` never runs anything: it says which sizes it wants probed
next (:meth:`Search.next_sizes`) and is told whether each met the target
(:meth:`Search.record`). The plan driver so runs the rounds of every
scheduler's search together, sharing workloads and workers, and the
platform can run each probe as its own task.

The search assumes that meeting the target is monotone in size (more
machines never hurt); it does not trust it. Its first round probes both
starts: the upper (compaction's no-queueing size) and the lower (lambda*'s, a
bound below which the queue cannot keep up). Sizes below the lower start are
taken to fail without a run until the lower start meets, since those runs are
the slowest. It widens the bracket by doubling up to the ceiling, and it
ends with a size that met and the size one below that failed, both probed:
the two verifying probes. (If the lower start meets, the search steps
on down from it by :data:`STEP_FRACTION` of it, then twice, four times that, ...,
and bisects back once a step fails.) :func:`violations` then lists
every probed pair where a smaller size met and a larger one did not.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from simcore.core.errors import ParameterError

#: First step below a lower start that met, as a fraction of it (at least one machine); the steps then double.
#: On a large cluster the answer can lie several percent below lambda*'s size (the notes: 5-12% on the
#: 10,000-machine plan); steps from one machine took 8-10 probes just to get below it.
STEP_FRACTION = 0.02


@dataclass
class Search:
    """The state of one bisection over integer sizes in ``[floor, ceiling]``.

    ``low`` and ``high`` are the starting guesses: a size believed too small (a lower
    bound) and one believed large enough (the given cluster); either may be wrong.
    """

    floor: int
    ceiling: int
    low: int
    high: int
    #: Size -> whether it met the target, for every size probed.
    results: dict[int, bool] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not 1 <= self.floor <= self.ceiling:
            raise ParameterError(f"sizes must satisfy 1 <= floor ({self.floor}) <= ceiling ({self.ceiling})")
        self.low = min(max(self.low, self.floor), self.ceiling)
        self.high = min(max(self.high, self.low), self.ceiling)

    def record(self, size: int, met: bool) -> None:
        self.results[size] = met

    def smallest_met(self) -> int | None:
        met = [s for s, ok in self.results.items() if ok]
        return min(met) if met else None

    def largest_failed_below(self, size: int | None) -> int | None:
        failed = [s for s, ok in self.results.items() if not ok and (size is None or s < size)]
        return max(failed) if failed else None

    @property
    def unreachable(self) -> bool:
        """True when the ceiling was probed and failed, and nothing met."""
        return self.smallest_met() is None and self.results.get(self.ceiling) is False

    @property
    def answer(self) -> int | None:
        """The smallest size that met, once the size below it (or the floor) is known; else None."""
        met = self.smallest_met()
        if met is None:
            return None
        if met == self.floor or self.results.get(met - 1) is False:
            return met
        return None

    @property
    def done(self) -> bool:
        return self.unreachable or self.answer is not None

    def next_sizes(self) -> list[int]:
        """The sizes to probe in the next round (empty when done)."""
        if self.done:
            return []
        met = self.smallest_met()
        if not self.results:
            # Both starts in the first round: on the plans measured (notes: capacity.md) every answer lay
            # below compaction's size and near or below lambda*'s, so the lower start is probed at once
            # instead of being reached by bisecting down from the upper one (87 -> 61 probes, 20 -> 13
            # rounds on the 10,000-machine plan). It costs one probe when the answer lies above it.
            return [self.high] if self.low >= self.high else [self.low, self.high]
        if met is None:
            # Nothing met yet: double past the largest failure, up to the ceiling.
            failed = self.largest_failed_below(None)
            assert failed is not None
            return [min(self.ceiling, max(2 * failed, failed + 1))]
        fail = self.largest_failed_below(met)
        if fail is None:
            if self.low >= met:
                # Everything probed met, the lower start too: step down from it by d, 2d, 4d, ... machines
                # (d = STEP_FRACTION of it), so the sizes probed lie d, 3d, 7d, ... below it.
                # (Not by halving: below a capacity bound runs grow slower the further below they are.)
                return [max(self.floor, self.low - 2 * (self.low - met) - self.step)]
            # Below the lower start the target is taken to fail (an unstable queue there costs the
            # longest runs), until a probe at the lower start says otherwise.
            fail = self.low - 1
        return [(fail + met) // 2]

    @property
    def step(self) -> int:
        """The first step below the lower start when it met: :data:`STEP_FRACTION` of it, at least 1 machine."""
        return max(1, int(self.low * STEP_FRACTION))


def bisect_smallest(
    meets: Callable[[int], bool], floor: int, ceiling: int, low: int | None = None, high: int | None = None
) -> Search:
    """Run a :class:`Search` with ``meets(size)`` as the probe (one size at a time); return the finished search."""
    s = Search(floor, ceiling, floor if low is None else low, ceiling if high is None else high)
    while not s.done:
        for size in s.next_sizes():
            s.record(size, meets(size))
    return s


def violations(results: dict[int, bool]) -> list[dict[str, int]]:
    """Each failing size above a smaller size that met: ``{"met": small, "failed": large}``, one per failing size.

    Empty when meeting the target was monotone over the sizes probed.
    """
    out = []
    sizes = sorted(results)
    for i, big in enumerate(sizes):
        if results[big]:
            continue
        smaller_met = [s for s in sizes[:i] if results[s]]
        if smaller_met:
            out.append({"met": max(smaller_met), "failed": big})
    return out
