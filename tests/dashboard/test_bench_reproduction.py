"""``manage.py bench_reproduction``: a paper figure through real workers, cell for cell against ``simcore sweep``."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from dashboard.models import Experiment, Run

pytestmark = pytest.mark.django_db(transaction=True)


def test_figure_11_on_the_platform_gives_every_cell_simcore_sweep_gives():
    out = io.StringIO()
    scale = "machines_per_config=1,hours=1,seeds=1"
    call_command("bench_reproduction", "lotes-fig11", scale=scale, workers=1, stdout=out)
    text = out.getvalue()
    # 6 Phi values x 3 schedulers x 1 seed, each run by the worker process and by the command line.
    assert "18/18 cells finished (finished)" in text, text
    assert "mean_response_s equal in 18 of 18 cells" in text, text
    assert "(0 not 0)" not in text, text  # some cells queue: the comparison is of waits, not of zeros
    assert "per-job records none" in text and "worker peak memory" in text
    assert not Experiment.objects.exists() and not Run.objects.exists()  # deleted unless --keep


def test_a_bad_scale_is_named_before_anything_starts():
    with pytest.raises(CommandError, match="machines_per_config"):
        call_command("bench_reproduction", scale="machines_per_config=0", stdout=io.StringIO())
    with pytest.raises(CommandError, match="'hours' is not NAME=VALUE"):
        call_command("bench_reproduction", scale="hours", stdout=io.StringIO())
    with pytest.raises(CommandError, match="no reproduction 'fig99'"):
        call_command("bench_reproduction", "fig99", stdout=io.StringIO())
    assert not Experiment.objects.exists()
