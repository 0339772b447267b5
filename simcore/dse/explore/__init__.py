"""Design-space exploration of datacenter schedulers (Mastenbroek, Andreadis and Iosup): the genetic search.

- :mod:`~simcore.dse.explore.genetic`: the operators (selection, crossover, mutations, pruning) on policies;
- :mod:`~simcore.dse.explore.fitness`: simulating one policy and scoring it (TRT, JMS, NJSL, JWT), cache keys;
- :mod:`~simcore.dse.explore.explain`: why the elite got better (section 3.5);
- :mod:`~simcore.dse.explore.search`: generations, the elite, the stop criteria, the loop;
- :mod:`~simcore.dse.explore.pool`: evaluating policies in local processes;
- :mod:`~simcore.dse.explore.report`: the tables of a search, as files.
"""

from simcore.dse.explore.explain import Explanation, StageChange
from simcore.dse.explore.fitness import METRIC_NAMES, Evaluation, evaluate
from simcore.dse.explore.search import GenerationRecord, SearchResult, SearchSettings, run_search

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
