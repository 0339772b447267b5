"""The design-space exploration instrument (the design-space exploration paper).

* :mod:`simcore.dse.staged`: the staged scheduler as data, its stages, atoms
  and policies, and the scheduling cycle that runs them (the scheduler
  itself is registered by :mod:`simcore.schedulers.staged`);
* :mod:`simcore.dse.explore`: the genetic search over policies, its fitness,
  the explanations of what changed, and ``simcore explore``'s loop.

Workflows and task graphs, the workloads the paper studies, are in
:mod:`simcore.workloads`; benchmarks in :mod:`simcore.bench`.
"""
