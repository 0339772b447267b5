# Pages under load (issue 25): what the sweep and experiment pages show, stored when a run finishes
# (dashboard.experiments.aggregates). Results stored before have no rows here; their pages compute what they
# show on each view, as before, until the backfill below (or the next run finishing) stores it.

import django.db.models.deletion
from django.db import migrations, models


def backfill(apps, schema_editor):
    """Store the aggregates of every experiment with finished runs (the worker's code over the historical rows)."""
    from dashboard.experiments import aggregates

    Experiment = apps.get_model("dashboard", "Experiment")
    for exp in Experiment.objects.filter(runs__status="finished").distinct().iterator(chunk_size=100):
        aggregates.backfill(apps, exp)


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0014_name_validators"),
    ]

    operations = [
        migrations.CreateModel(
            name="CellAggregate",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("point_key", models.CharField(blank=True, default="", max_length=1000)),
                ("scheduler", models.CharField(max_length=100)),
                ("point", models.JSONField(blank=True, default=dict)),
                ("run_ids", models.JSONField(default=list)),
                ("stats", models.JSONField(default=dict)),
                (
                    "experiment",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="cell_aggregates",
                        to="dashboard.experiment",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("experiment", "point_key", "scheduler"), name="one_aggregate_per_cell"
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="ExperimentCharts",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("run_ids", models.JSONField(default=list)),
                ("figures", models.TextField(default="{}")),
                (
                    "experiment",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="stored_charts",
                        to="dashboard.experiment",
                    ),
                ),
            ],
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
