"""``manage.py wacz_export (--job ID | --run ID | --collection ID) --to FILE``: a WACZ package to replay."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from storage.services.wacz import wacz_write


class Command(BaseCommand):
    requires_system_checks = []  # a batch tool
    help = (
        "Write the WACZ package of an ended job, of a harvest definition's run or of a collection whose "
        "WARC files are all ingested: the WARC files read from replicas that pass their checksum, the CDXJ "
        "index of their captures, the seeds as entry pages and datapackage.json with every file's SHA-256, "
        "read back whole before it is given its name. FILE must not exist; nothing is written on refusal."
    )

    def add_arguments(self, parser):
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--job", type=int, metavar="ID", help="One job.")
        source.add_argument("--run", type=int, metavar="ID", help="Every job of a harvest definition's run.")
        source.add_argument(
            "--collection", type=int, metavar="ID", help="Every job of a collection's definitions."
        )
        parser.add_argument(
            "--to", required=True, metavar="FILE", help="The .wacz file to write (must not exist)."
        )

    def handle(self, *args, job, run, collection, to, **options):
        try:
            package = wacz_write(target=to, job_id=job, run_id=run, collection_id=collection)
        except ValidationError as error:
            raise CommandError("\n".join(error.messages)) from error
        except OSError as error:
            raise CommandError(f"The package could not be written in {to}: {error}") from error
        self.stdout.write(
            f"Jobs {', '.join(map(str, package.job_ids))} packaged in {package.path}: {package.warc_files} "
            f"WARC files, {package.captures} captures, {package.pages} entry pages, {package.size} bytes."
        )
