"""``manage.py register_warcs PATH… [--sha256 HEX] [--size N]``: WARC files written by crawlers
outside the archive made files of the archive, their captures to come from those crawlers' CDXJ or
CDX lines (``POST /api/cdx/``)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django.utils.translation import gettext as _

from storage.services.outside_index import OutsideFileRefused, warc_file_register_outside


class Command(BaseCommand):
    help = (
        "Register WARC files written elsewhere (by an outside crawler) as files of the archive, where "
        "they are: each is read whole as WARC (a torn or non-WARC file is refused) and its size and "
        "SHA-256 recorded (and compared with --sha256 and --size when given). Nothing is indexed: the "
        "crawler posts its index lines to /api/cdx/. Registering the same file again changes nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "paths", nargs="+", metavar="PATH", help="WARC files, where the archive keeps them."
        )
        parser.add_argument("--sha256", default="", help="The SHA-256 the file must have (one file only).")
        parser.add_argument("--size", type=int, help="The size in bytes the file must have (one file only).")

    def handle(self, *args, paths, sha256, size, **options):
        if (sha256 or size is not None) and len(paths) > 1:
            raise CommandError(_("--sha256 and --size check one file: give one path."))
        refused = 0
        for path in paths:
            try:
                warc = warc_file_register_outside(path=path, sha256=sha256, size=size)
            except OutsideFileRefused as refusal:
                refused += 1
                self.stderr.write(_("refused: %(path)s: %(reason)s") % {"path": path, "reason": refusal})
                continue
            self.stdout.write(f"{warc.name}\t{warc.size}\t{warc.sha256}")
        if refused:
            raise CommandError(_("%(count)d files refused.") % {"count": refused})
