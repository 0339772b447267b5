"""The one place that converts between database rows and simcore objects, by concern.

- :mod:`~dashboard.services.uploads`: checking and storing uploads;
- :mod:`~dashboard.services.experiments`: scenarios from the web, experiments and their runs, sharing;
- :mod:`~dashboard.services.execution`: a worker running a run;
- :mod:`~dashboard.services.results`: reading results.

Views and tasks call these functions and hold no domain logic themselves.
Scenario dicts follow :mod:`simcore.archive`; a worker runs a run through
:func:`simcore.scenario.run_scenario`, exactly as ``simcore rerun`` does, so
the numbers on the page are the numbers a colleague reproduces.
"""
