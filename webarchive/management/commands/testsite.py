"""Serve the synthetic test website in the foreground: ``manage.py testsite --port 8800``."""

from django.core.management.base import BaseCommand, CommandError

from webarchive.testsite import TestSite


class Command(BaseCommand):
    help = (
        "Serve the synthetic test website on 127.0.0.1 (only) until Ctrl-C. "
        "Its index page lists what it offers."
    )
    requires_system_checks = []  # it uses nothing of the project's models or configuration

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=8800, help="Port to listen on (0: any free port).")
        parser.add_argument(
            "--seed",
            type=int,
            default=0,
            help=(
                "Seed of the generated parts of the site: the same seed always gives the same site. "
                "Accepted and kept now; the generator that uses it comes later."
            ),
        )

    def handle(self, *args, **options):
        port = options["port"]
        if not 0 <= port <= 65535:
            raise CommandError("The port must be between 0 and 65535.")
        log = self.stdout.write if options["verbosity"] >= 1 else None
        site = TestSite(port=port, seed=options["seed"], log=log)
        try:
            site.bind()
        except OSError as error:
            raise CommandError(f"Cannot listen on 127.0.0.1:{port}: {error}") from error
        self.stdout.write(
            self.style.SUCCESS(f"Test website at {site.url('/')} (seed {site.seed}). Stop with Ctrl-C.")
        )
        try:
            site.serve_forever()
        except KeyboardInterrupt:
            self.stdout.write("Stopped.")
