"""Design-space exploration of datacenter schedulers (Mastenbroek, Andreadis and Iosup): the genetic search.

- :mod:`~simcore.explore.genetic`: the operators (selection, crossover, mutations, pruning) on policies;
- :mod:`~simcore.explore.fitness`: simulating one policy and scoring it (TRT, JMS, NJSL, JWT), cache keys;
- :mod:`~simcore.explore.explain`: why the elite got better (section 3.5);
- :mod:`~simcore.explore.search`: generations, the elite, the stop criteria, the loop;
- :mod:`~simcore.explore.pool`: evaluating policies in local processes;
- :mod:`~simcore.explore.report`: the tables of a search, as files.
"""

from simcore.explore.explain import Explanation, StageChange
from simcore.explore.fitness import METRIC_NAMES, Evaluation, evaluate
from simcore.explore.search import GenerationRecord, SearchResult, SearchSettings, run_search

__all__ = [
    "METRIC_NAMES",
    "Evaluation",
    "Explanation",
    "GenerationRecord",
    "SearchResult",
    "SearchSettings",
    "StageChange",
    "evaluate",
    "run_search",
]
