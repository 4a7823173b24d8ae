from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("selection", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="selectionsettingschange",
            name="reason",
            field=models.CharField(blank=True, default="", max_length=500),
        ),
    ]
