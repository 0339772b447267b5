"""Compiled simulation: built-in schedulers' kernels run the engine's loop in machine code (numba).

Each built-in scheduler with a kernel keeps its Python class as the
specification (``--engine python`` runs it) and its kernel beside it, in the
scheduler's own package (``simcore/schedulers/<name>/kernel.py``). The
kernel must make the identical decisions: the same start time and machine
for every job, which the Hypothesis tests in ``tests/simcore/test_kernels.py``
check over random clusters and workloads. Users' plugin schedulers have no
kernel and run in the Python loop, unchanged.

Modules: :mod:`~simcore.compiled.jit` (numba and its cache directory),
:mod:`~simcore.compiled.core` (the engine's rules as njit helpers),
:mod:`~simcore.compiled.driver` (the kernel record, the engine's arrays),
:mod:`~simcore.compiled.loop` (the chunked loop with samples, progress and cancellation).
"""
