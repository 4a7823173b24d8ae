# The static query encoder kept in Postgres (QUIVER_QUERY_ENCODER_STORE=postgres).

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("catalog", "0055_job_waiting_index"),
    ]

    operations = [
        migrations.CreateModel(
            name="StoredQueryEncoder",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("weights_digest", models.CharField(max_length=64)),
                ("encoder_id", models.CharField(max_length=32)),
                ("trained_on", models.IntegerField()),
                ("data", models.BinaryField()),
                ("created", models.DateTimeField(auto_now_add=True)),
            ],
            options={
                "db_table": "catalog_stored_query_encoder",
                "indexes": [models.Index(fields=["weights_digest", "-id"], name="stored_encoder_newest")],
            },
        ),
    ]
