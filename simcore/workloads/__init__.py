"""Workloads: generated job streams, class tables, task ordering and the workflow generator.

* :mod:`simcore.workloads.generators`: arrivals and job draws of the
  synthetic presets;
* :mod:`simcore.workloads.classify` and :mod:`simcore.workloads.classfile`:
  job classes (a trace's jobs grouped into classes; a class table file);
* :mod:`simcore.workloads.taskorder`: tasks read from a file put in the
  order a task graph (:mod:`simcore.core.taskgraph`) needs, and subsets of
  graphs;
* :mod:`simcore.workloads.workflowgen`: random workflow workloads (chains,
  fork-joins, layered DAGs, bags) behind the ``workflows`` presets.

The presets that name these workloads are :mod:`simcore.presets`; the
profile study's workloads are :mod:`simcore.profiles`.
"""
