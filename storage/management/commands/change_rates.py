"""``manage.py change_rates``: measure how often records' pages and domains change, now."""

from django.core.management.base import BaseCommand
from django.utils.translation import gettext as _

from storage.services.change_rates import change_estimates_refresh


class Command(BaseCommand):
    help = (
        "Measure every record's and every domain's change rate from successive captures, store the "
        "estimates and suggested frequencies, and apply them in collections that follow suggestions."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--no-follow", action="store_true", help="Do not change the frequencies of following collections."
        )

    def handle(self, *args, no_follow=False, **options):
        result = change_estimates_refresh(follow=not no_follow)
        self.stdout.write(
            _("%(records)d record estimates, %(domains)d domain estimates, %(followed)d records followed.")
            % result
        )
