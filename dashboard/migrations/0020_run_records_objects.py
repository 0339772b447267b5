# Per-job records leave PostgreSQL (issue 29): a run's records are one Parquet object in the "records" storage
# (dashboard.experiments.storage) and this row says where. Runs stored before keep their RunJobsChunk / RunJobs
# rows, which dashboard.experiments.jobs still reads: no data moves here.

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0019_capacity_plans"),
    ]

    operations = [
        migrations.CreateModel(
            name="RunRecordsObject",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("key", models.CharField(max_length=500, unique=True)),
                ("rows", models.BigIntegerField()),
                ("row_groups", models.IntegerField()),
                ("size", models.BigIntegerField()),
                ("sha256", models.CharField(max_length=64)),
                ("layout", models.PositiveSmallIntegerField()),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "run",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE, related_name="records_object", to="dashboard.run"
                    ),
                ),
            ],
        ),
    ]
