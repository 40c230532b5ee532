"""manage.py discover_sites: count the external links of ended site crawls in the discovered sites
(docs/curation.md, "Discovered sites"); the beat runs the same every DISCOVERY_INTERVAL seconds."""

from django.core.management.base import BaseCommand

from harvest.services.discovery import discovered_sites_fold


class Command(BaseCommand):
    help = "Count the external links of the site crawls ended since the last run in the discovered sites."

    def handle(self, *args, **options):
        folded = discovered_sites_fold()
        self.stdout.write(f"{folded} site crawls counted.")
