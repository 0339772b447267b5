"""The web process's memory while it serves a large per-job download from the records storage (issue 29).

A finished run whose records are N synthetic jobs (bench/records_store.py's arrays) stored as a Parquet object
(row groups of SIMCORE_JOB_CHUNK jobs) in the configured records storage; then its jobs.csv and jobs.parquet
downloads, read in full through Django's request handling in this process, with the peak resident memory
sampled every 10 ms (manage.py bench_web's sampler). Run it for two sizes: the peak should not grow with N.

    DEBUG=1 DATABASE_URL=postgresql://.../db SIMCORE_STORAGE_URL=file:///tmp/x PYTHONPATH=. \
        python bench/records_download.py 10000000
"""

from __future__ import annotations

import gc
import os
import sys
import time
from types import SimpleNamespace
from typing import Any, cast

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth.models import User  # noqa: E402
from django.test import Client  # noqa: E402
from django.urls import reverse  # noqa: E402

from dashboard.experiments import storage  # noqa: E402
from dashboard.management.commands.bench_web import _Peak  # noqa: E402
from dashboard.models import Experiment, Run, RunRecordsObject, RunResult, Status  # noqa: E402
from simcore import archive  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from records_store import synthetic_result  # noqa: E402


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000_000
    owner, _ = User.objects.get_or_create(username="bench", defaults={"is_staff": False})
    exp = Experiment.objects.create(
        owner=owner, name="bench download", scenario={}, cluster_label="synthetic", workload_label="synthetic"
    )
    run = Run.objects.create(experiment=exp, scheduler="greedy", seed=0, status=Status.FINISHED, jobs_total=n)
    RunResult.objects.create(run=run, summary={"jobs": n}, series={}, per_class=[])
    outcome = SimpleNamespace(result=synthetic_result(n))
    stored = storage.write_records(
        exp.pk,
        run.pk,
        1,
        archive.job_column_chunks(outcome, settings.SIMCORE_JOB_CHUNK),
        sampled=False,  # type: ignore[arg-type]
    )
    del outcome
    gc.collect()
    RunRecordsObject.objects.create(
        run=run,
        key=stored.key,
        rows=stored.rows,
        row_groups=stored.row_groups,
        size=stored.size,
        sha256=stored.sha256,
        layout=storage.LAYOUT,
    )
    Run.objects.filter(pk=run.pk).update(records={"policy": "all", "kept": "all", "jobs_kept": n, "of": n})
    client = Client()
    client.force_login(owner)
    try:
        for kind in ("jobs.csv", "jobs.parquet"):
            gc.collect()
            t0 = time.perf_counter()
            with _Peak() as mem:
                resp = client.get(reverse("run-download", args=[exp.pk, run.pk, kind]))
                size = sum(len(piece) for piece in cast(Any, resp).streaming_content)
                resp.close()
            print(
                f"{n:,} jobs ({stored.row_groups} row groups, object {stored.size / 1e6:.0f} MB): download {kind} "
                f"{size / 1e6:,.0f} MB in {time.perf_counter() - t0:.1f} s, {mem}, load {os.getloadavg()[0]:.1f}"
            )
    finally:
        Experiment.objects.filter(pk=exp.pk).delete()
        storage.delete_folder(storage.experiment_folder(exp.pk))


if __name__ == "__main__":
    main()
