"""manage.py preload_domains: broad-crawl preparation from domain lists, in the foreground."""

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.urls import reverse

from harvest.choices import HarvestKind
from harvest.models import HarvestDefinition, PreloadInvalidLine, PreloadRun, PreloadStep
from harvest.services.preload import SourceSpec, preload_create, preload_run, statistics_rows
from harvest.services.preload.audit import step_record
from harvest.services.preload.ingest import INVALID_KEPT

SHOWN_INVALID = 20  # invalid lines printed at the end of a run


class Command(BaseCommand):
    help = (
        "Prepare a snapshot harvest from domain lists (one domain or URL per line, or a CSV column):"
        " normalise, merge, check DNS, discover redirects, load. --resume RUN continues an interrupted run."
    )

    def add_arguments(self, parser):
        parser.add_argument("files", nargs="*", metavar="FILE")
        parser.add_argument(
            "--source",
            action="append",
            default=[],
            metavar="NAME",
            help="the source of the files: once for all, or once per file in order",
        )
        parser.add_argument("--column", default="", help="read this column of CSV files (by its header)")
        parser.add_argument(
            "--definition",
            help="the snapshot harvest definition (by name; default: the only active one, or none)",
        )
        parser.add_argument(
            "--nameserver", action="append", default=[], metavar="HOST[:PORT]", help="DNS server (repeatable)"
        )
        parser.add_argument("--dns-timeout", type=float, default=2.0, metavar="SECONDS")
        parser.add_argument("--dns-retries", type=int, default=1)
        parser.add_argument("--no-dns", action="store_true", help="treat every domain as live")
        parser.add_argument("--no-redirects", action="store_true", help="skip redirect discovery")
        parser.add_argument(
            "--no-selection", action="store_true", help="leave out the librarians' validated records"
        )
        parser.add_argument("--resume", type=int, metavar="RUN", help="resume an interrupted run")

    def handle(self, *args, **options):
        if options["resume"]:
            run = PreloadRun.objects.filter(pk=options["resume"]).first()
            if run is None:
                raise CommandError(f"No preload run {options['resume']}.")
            if run.state != PreloadRun.State.DONE:  # in its audit trail: resumed from the command line
                step_record(run=run, kind=PreloadStep.Kind.RESUMED, stage=run.stage)
        else:
            run = self._create(options)
        self.stdout.write(str(run))
        last = [None]

        def progress(run):
            if run.stage != last[0] or run.done == run.total:
                self.stdout.write(f"  {run.get_stage_display()}: {run.done:,} of {run.total:,}")
                last[0] = run.stage

        run = preload_run(run.pk, progress=progress)
        if run.state != PreloadRun.State.DONE:
            raise CommandError(
                f"Preload run {run.pk} {run.get_state_display()} in stage {run.get_stage_display()}:"
                f" {run.error or 'stopped'}. Resume it with --resume {run.pk}."
            )
        for row in statistics_rows(run):
            if row[0] != "tld":
                self.stdout.write("  " + " ".join(str(cell) for cell in row if cell != ""))
        self._invalid_lines(run)
        self.stdout.write(self.style.SUCCESS(f"Preload run {run.pk} done."))

    def _invalid_lines(self, run: PreloadRun) -> None:
        """The first SHOWN_INVALID invalid lines (source, number, text, reason), and where the rest are."""
        total = sum(run.sources.values_list("invalid", flat=True))
        if not total:
            return
        self.stdout.write(self.style.WARNING(f"  {total:,} invalid line(s); the first {SHOWN_INVALID}:"))
        lines = PreloadInvalidLine.objects.filter(source__run=run).select_related("source")
        for line in lines.order_by("source__pk", "line")[:SHOWN_INVALID]:
            self.stdout.write(f"    {line.source.name} line {line.line}: {line.text!r} — {line.reason}")
        where = settings.WEBARCHIVE_URL.rstrip("/") + reverse("harvest:preload_invalid_lines", args=[run.pk])
        self.stdout.write(
            f"  All of them (the first {INVALID_KEPT:,} of each source are kept): {where}"
            f" (and on the run's page, Planning → Broad-crawl preparations → {run.pk})."
        )

    def _create(self, options) -> PreloadRun:
        files, names = options["files"], options["source"]
        if not files and options["no_selection"]:
            raise CommandError("Give at least one FILE (or leave the librarians' records in).")
        if files and not names:
            raise CommandError("Name the source of the files with --source NAME.")
        if len(names) not in (1, len(files)):
            raise CommandError("Give --source once for all the files, or once per file.")
        if len(names) == 1:
            names = names * len(files)
        definition = self._definition(options["definition"])
        try:
            return preload_create(
                harvest_definition=definition,
                sources=[
                    SourceSpec(name=name, path=path, column=options["column"])
                    for name, path in zip(names, files, strict=True)
                ],
                check_dns=not options["no_dns"],
                find_redirects=not options["no_redirects"],
                include_selection=not options["no_selection"],
                nameservers=options["nameserver"],
                dns_timeout=options["dns_timeout"],
                dns_retries=options["dns_retries"],
            )
        except ValidationError as error:
            messages = [
                f"{field}: {message}" for field, items in error.message_dict.items() for message in items
            ]
            raise CommandError("\n".join(messages)) from None

    def _definition(self, name: str | None) -> HarvestDefinition | None:
        snapshots = HarvestDefinition.objects.filter(kind=HarvestKind.SNAPSHOT)
        if name:
            definition = snapshots.filter(name=name).first()
            if definition is None:
                raise CommandError(f"No snapshot harvest definition named “{name}”.")
            return definition
        active = list(snapshots.filter(is_active=True)[:2])
        # None: the domains are loaded all the same; every snapshot takes the active ones.
        return active[0] if len(active) == 1 else None
