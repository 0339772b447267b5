# Column maps for foreign CSV traces (issue 17): saved maps, and the draft the mapping page previews.

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ("dashboard", "0010_sweeps"),
    ]

    operations = [
        migrations.CreateModel(
            name="TraceMapping",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("name", models.CharField(max_length=100)),
                ("column_map", models.TextField()),
                ("where", models.TextField(blank=True)),
                ("created", models.DateTimeField(default=django.utils.timezone.now)),
                (
                    "owner",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="trace_mappings",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={"ordering": ["name"]},
        ),
        migrations.AddConstraint(
            model_name="tracemapping",
            constraint=models.UniqueConstraint(fields=("owner", "name"), name="one_mapping_name_per_owner"),
        ),
        migrations.CreateModel(
            name="TraceDraft",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("name", models.CharField(blank=True, max_length=100)),
                ("filename", models.CharField(max_length=200)),
                ("content_gz", models.BinaryField()),
                ("head", models.TextField()),
                ("created", models.DateTimeField(default=django.utils.timezone.now)),
                (
                    "owner",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="trace_draft",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
        ),
    ]
