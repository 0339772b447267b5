"""The benchmarks behind ``simcore bench`` and ``make bench``: how fast and how big, measured.

It sits above every other part of the library (it times them), and nothing
below it imports it.

* :mod:`simcore.bench.runs`: each scheduler's runs, one child process each
  (jobs per second, peak memory), and the report;
* :mod:`simcore.bench.staged`: the staged scheduler's policies on a
  bag-of-tasks workload (and the cluster and workload its tests reuse);
* :mod:`simcore.bench.explore`: one generation of the design-space search;
* :mod:`simcore.bench.packing`: compaction and continuous packing;
* :mod:`simcore.bench.workflows`: reading WfCommons instances, simulating
  workflows.
"""
