"""The ground floor: the model, the engine and what both rest on. Imports nothing above it.

* :mod:`simcore.core.model`: clusters, workloads, class tables;
  :mod:`simcore.core.taskgraph`: jobs made of tasks (the model's graphs);
* :mod:`simcore.core.engine`: the discrete-event loop (it enforces capacity,
  causality and the fit rule; a scheduler only decides), and
  :mod:`simcore.core.view`: the engine's state as schedulers read it;
* :mod:`simcore.core.fit`: the one fit rule; :mod:`simcore.core.seeding`:
  the one seeding rule; :mod:`simcore.core.limits`: bounds on inputs;
* :mod:`simcore.core.metrics` and :mod:`simcore.core.jobmetrics`: a run's
  summary, series and per-job (per-DAG) figures;
* :mod:`simcore.core.errors`: the few precise exception types;
  :mod:`simcore.core.registry`: the name -> class registry the schedulers and
  presets use.

The engine calls schedulers through its own :class:`~simcore.core.engine.Scheduler`
protocol, so it never imports :mod:`simcore.schedulers`; the compiled loop
(:mod:`simcore.compiled`) is imported lazily, only when a kernel runs.
"""
