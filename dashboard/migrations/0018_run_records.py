from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0017_analysis_snapshot_size"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="records",
            field=models.JSONField(blank=True, null=True),
        ),
    ]
