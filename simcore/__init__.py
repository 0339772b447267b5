"""simcore: a discrete-event simulator of heterogeneous datacenter clusters and their schedulers.

A plain library (standard library, numpy and scipy only): usable from a
notebook, the ``simcore`` command line, or the dashboard's workers.

    >>> from simcore import api
    >>> out = api.run(api.RunSpec(cluster="google-balanced", workload="google-like",
    ...                           scheduler="greedy", hours=0.01, cluster_params={"machines_per_config": 5}))
    >>> out.summary["mean_response_s"]  # doctest: +SKIP
"""

from simcore.version import __version__, code_version

__all__ = ["__version__", "code_version"]
