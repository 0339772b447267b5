# Sweeps (issue 12): a run is a cell of a grid (its point), cached results, paper reproductions.

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0009_searches"),
    ]

    operations = [
        migrations.RemoveConstraint(model_name="run", name="one_run_per_cell"),
        migrations.AddField(
            model_name="run",
            name="point",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.AddField(
            model_name="run",
            name="point_key",
            field=models.CharField(blank=True, default="", max_length=1000),
        ),
        migrations.AddField(
            model_name="run",
            name="cache_key",
            field=models.CharField(blank=True, db_index=True, max_length=64),
        ),
        migrations.AddField(
            model_name="run",
            name="cached_from",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to="dashboard.run",
            ),
        ),
        migrations.AddField(
            model_name="experiment",
            name="reproduction",
            field=models.JSONField(blank=True, null=True),
        ),
        migrations.AddConstraint(
            model_name="run",
            constraint=models.UniqueConstraint(
                fields=("experiment", "point_key", "scheduler", "seed"), name="one_run_per_cell"
            ),
        ),
    ]
