"""Serve the synthetic test website in the foreground: ``manage.py testsite --port 8800 [--hosts 3]``."""

from django.core.management.base import BaseCommand, CommandError

from webarchive.testsite import HOSTS, TestSite

MAX_PAGES = 1_000_000


class Command(BaseCommand):
    help = (
        "Serve the synthetic test website on 127.0.0.1 (only; with --hosts, also 127.0.0.2 and 127.0.0.3 "
        "on the same port) until Ctrl-C. Its index page lists what it offers; the generated website "
        "for crawlers is under /site/."
    )
    requires_system_checks = []  # it uses nothing of the project's models or configuration

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=8800, help="Port to listen on (0: any free port).")
        parser.add_argument(
            "--seed",
            type=int,
            default=0,
            help="Seed of the generated website: the same seed and pages always give the same site.",
        )
        parser.add_argument(
            "--pages", type=int, default=100, help="Number of pages of the generated website (default 100)."
        )
        parser.add_argument(
            "--hosts",
            type=int,
            default=1,
            help="1: 127.0.0.1 only; 2: also its CDN on 127.0.0.2; 3: also an external site on 127.0.0.3.",
        )
        parser.add_argument(
            "--large-file-bytes",
            type=int,
            default=2 * 1024 * 1024,
            help="Size of the generated website's large file (default 2 MiB).",
        )
        parser.add_argument(
            "--slow-seconds",
            type=float,
            default=0.3,
            help="How long the generated website's slow page waits (default 0.3).",
        )

    def handle(self, *args, **options):
        port, pages, hosts = options["port"], options["pages"], options["hosts"]
        if not 0 <= port <= 65535:
            raise CommandError("The port must be between 0 and 65535.")
        if not 1 <= pages <= MAX_PAGES:
            raise CommandError(f"--pages must be between 1 and {MAX_PAGES:,}.")
        if not 1 <= hosts <= len(HOSTS):
            raise CommandError(f"--hosts must be between 1 and {len(HOSTS)}.")
        if options["large_file_bytes"] < 0 or options["slow_seconds"] < 0:
            raise CommandError("--large-file-bytes and --slow-seconds cannot be negative.")
        # Each request is logged only when asked (-v 2): logging costs, and benchmarks measure this server.
        log = self.stdout.write if options["verbosity"] >= 2 else None
        site = TestSite(
            port=port,
            seed=options["seed"],
            pages=pages,
            hosts=hosts,
            large_file_bytes=options["large_file_bytes"],
            slow_seconds=options["slow_seconds"],
            log=log,
        )
        try:
            site.bind()
        except OSError as error:
            addresses = ", ".join(f"{host}:{port}" for host in HOSTS[:hosts])
            raise CommandError(f"Cannot listen on {addresses}: {error}") from error
        self.stdout.write(
            self.style.SUCCESS(f"Test website at {site.url('/')} (seed {site.seed}). Stop with Ctrl-C.")
        )
        self.stdout.write(f"Generated website: {site.url('/site/')} ({pages:,} pages).")
        if hosts >= 2:
            self.stdout.write(f"Its CDN: {site.host_url(1, '/cdn/')}")
        if hosts >= 3:
            self.stdout.write(f"An external site: {site.host_url(2, '/ext/')}")
        try:
            site.serve_forever()
        except KeyboardInterrupt:
            self.stdout.write("Stopped.")
