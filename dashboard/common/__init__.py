"""What every feature shares: access rules, job states and transitions, heartbeats, recovery and repair,
queues and waiting notes, outages, names, limits, chart helpers, URL converters and error pages.

Nothing here imports a feature (tests/dashboard/test_layout.py checks it): a feature hands common what it
needs to know (its queued work, its lost-work recovery, its waiting rows) through the registries in
:mod:`dashboard.common.queueing`, :mod:`dashboard.common.waiting` and :mod:`dashboard.common.repair`.
"""
