"""manage.py reindex [--catalog SLUG] [--force]: embed catalogs, with progress."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from catalog.models import Catalog
from catalog.services.embeddings import run_reindex, start_reindex
from jobs.models import Job
from jobs.services import claim_job


class Command(BaseCommand):
    help = "Embed every tool whose text or model changed (all tools with --force)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--catalog", help="only this catalog (slug)")
        parser.add_argument("--force", action="store_true", help="re-embed everything")

    def handle(self, *args: Any, **options: Any) -> None:
        catalogs = Catalog.objects.order_by("slug")
        if options["catalog"]:
            catalogs = catalogs.filter(slug=options["catalog"])
            if not catalogs.exists():
                raise CommandError(f"--catalog: no catalog {options['catalog']!r}")
        for catalog in catalogs:
            self._reindex(catalog, options["force"])

    def _reindex(self, catalog: Catalog, force: bool) -> None:
        job = start_reindex(catalog, force=force, enqueue=False)
        claimed = claim_job(job.pk)
        if claimed is None:
            raise CommandError(f"job {job.pk} was taken by another process")
        with tqdm(total=job.total, desc=catalog.slug, unit="tool") as bar:

            def advance(current: Job) -> None:
                bar.update(current.done - bar.n)

            done = run_reindex(claimed, progress=advance)
            bar.update(done.total - bar.n)
        counts = done.counts
        self.stdout.write(
            f"{catalog.slug}: {counts.get('embedded', 0)} embedded, "
            f"{counts.get('unchanged', 0)} unchanged (job {done.pk})."
        )
