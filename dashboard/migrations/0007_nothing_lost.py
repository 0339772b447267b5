# Issue 12, nothing lost: attempt numbers fence every write of a worker; lost attempts are recorded.

from typing import Any

from django.db import migrations, models


def count_past_claims(apps: Any, schema_editor: Any) -> None:
    """Work a worker already took (it has a start time) was claimed once: its attempt number is 1."""
    for name in ("Run", "TraceUpload"):
        apps.get_model("dashboard", name).objects.exclude(started_at=None).update(attempt=1)


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0006_wfcommons_format"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="attempt",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="run",
            name="lost_attempts",
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.AddField(
            model_name="traceupload",
            name="attempt",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="traceupload",
            name="lost_attempts",
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.RunPython(count_past_claims, migrations.RunPython.noop),
    ]
