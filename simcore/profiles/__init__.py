"""The profile-driven scheduling study's world (Kontothanassis & Goddeau, HPL-2004-192).

Machines run one job at a time; a job's run time depends on its type and the
machine's type, and is shorter when the machine last ran the same job type
(warm file cache). Modules: :mod:`~simcore.profiles.table` (profile tables,
loading and validation), :mod:`~simcore.profiles.runtime` (the engine's
run-time model), :mod:`~simcore.profiles.trace` (NCBI-like traces),
:mod:`~simcore.profiles.pool` (idle machines grouped by type and cache
state, for the schedulers), :mod:`~simcore.profiles.build` (clusters and
workloads) and :mod:`~simcore.profiles.sizing` (the smallest cluster on which
FCFS keeps up).
"""

from simcore.profiles.runtime import ProfileRuntime
from simcore.profiles.table import ProfileTable, load_profile, parse_profile

__all__ = ["ProfileRuntime", "ProfileTable", "load_profile", "parse_profile"]
