# The dashboard's hourly summary (audit/rollup.py): derived tables, left empty with
# the mark at 0; the sealer backfills them (ROLLUP_STEP rows per transaction) and
# `manage.py audit_rollup` catches up at once.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('audit', '0008_merge_0007_million_indexes_0007_sinks_key_rotated'),
    ]

    operations = [
        migrations.CreateModel(
            name='AuditRollupMark',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('seq', models.BigIntegerField(default=0)),
            ],
            options={
                'db_table': 'audit_rollup_mark',
            },
        ),
        migrations.CreateModel(
            name='AuditRollupHour',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('catalog_slug', models.CharField(max_length=64)),
                ('hour', models.DateTimeField()),
                ('selections', models.BigIntegerField(default=0)),
                ('no_tools', models.BigIntegerField(default=0)),
                ('degraded', models.BigIntegerField(default=0)),
                ('cached', models.BigIntegerField(default=0)),
                ('checks', models.BigIntegerField(default=0)),
                ('invalid_checks', models.BigIntegerField(default=0)),
                ('calls', models.BigIntegerField(default=0)),
                ('invalid_calls', models.BigIntegerField(default=0)),
                ('not_offered', models.BigIntegerField(default=0)),
                ('unknown_tool', models.BigIntegerField(default=0)),
                ('not_allowed', models.BigIntegerField(default=0)),
            ],
            options={
                'db_table': 'audit_rollup_hour',
                'constraints': [models.UniqueConstraint(fields=('hour', 'catalog_slug'), name='audit_rollup_hour_key')],
            },
        ),
        migrations.CreateModel(
            name='AuditRollupLatency',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('catalog_slug', models.CharField(max_length=64)),
                ('hour', models.DateTimeField()),
                ('bucket', models.SmallIntegerField()),
                ('count', models.BigIntegerField(default=0)),
            ],
            options={
                'db_table': 'audit_rollup_latency',
                'constraints': [models.UniqueConstraint(fields=('hour', 'catalog_slug', 'bucket'), include=('count',), name='audit_rollup_latency_key')],
            },
        ),
        migrations.CreateModel(
            name='AuditRollupName',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('catalog_slug', models.CharField(max_length=64)),
                ('hour', models.DateTimeField()),
                ('kind', models.CharField(choices=[('offered', 'Tool offered'), ('excluded', 'Tool left out'), ('rule', 'Rule that left a tool out')], max_length=8)),
                ('name', models.TextField()),
                ('count', models.BigIntegerField(default=0)),
            ],
            options={
                'db_table': 'audit_rollup_name',
                'constraints': [models.UniqueConstraint(fields=('kind', 'hour', 'catalog_slug', 'name'), include=('count',), name='audit_rollup_name_key')],
            },
        ),
        migrations.CreateModel(
            name='AuditRollupNameDay',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('catalog_slug', models.CharField(max_length=64)),
                ('day', models.DateTimeField()),
                ('kind', models.CharField(choices=[('offered', 'Tool offered'), ('excluded', 'Tool left out'), ('rule', 'Rule that left a tool out')], max_length=8)),
                ('name', models.TextField()),
                ('count', models.BigIntegerField(default=0)),
            ],
            options={
                'db_table': 'audit_rollup_name_day',
                'constraints': [models.UniqueConstraint(fields=('kind', 'day', 'catalog_slug', 'name'), include=('count',), name='audit_rollup_name_day_key')],
            },
        ),
        migrations.RunSQL(
            sql="INSERT INTO audit_rollup_mark (id, seq) VALUES (1, 0)",
            reverse_sql=migrations.RunSQL.noop,
        ),
    ]
