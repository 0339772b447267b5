# Per-job records in chunks (RunJobsChunk): a paper-scale run's records exceed one database value (1 GB).
# Runs stored before keep their one RunJobs blob, read as a single chunk (dashboard.experiments.jobs).

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0011_trace_mappings"),
    ]

    operations = [
        migrations.CreateModel(
            name="RunJobsChunk",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("index", models.IntegerField()),
                ("first", models.BigIntegerField()),
                ("n_jobs", models.BigIntegerField()),
                ("data", models.BinaryField()),
                (
                    "run",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="job_chunks", to="dashboard.run"
                    ),
                ),
            ],
            options={
                "ordering": ["run", "index"],
                "constraints": [models.UniqueConstraint(fields=("run", "index"), name="one_chunk_per_run_index")],
            },
        ),
    ]
