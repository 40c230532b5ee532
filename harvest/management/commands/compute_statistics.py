"""manage.py compute_statistics: compute the statistics of ended jobs again (docs/reports.md)."""

from django.core.management.base import BaseCommand, CommandError
from django.db.models.functions import ExtractMonth
from django.utils import timezone

from harvest.models import Job, JobStatistics
from harvest.services.period_statistics import Period, period_statistics_refresh
from harvest.services.statistics import job_statistics_compute


class Command(BaseCommand):
    help = (
        "Compute the statistics of ended jobs again (they are computed when a job ends): the given jobs,"
        " the jobs of a year, or all ended jobs; or only the domain figures of every year and month"
        " (--periods: after an upgrade, or a change of REPORT_SIZE_CLASSES)."
    )

    def add_arguments(self, parser):
        parser.add_argument("jobs", nargs="*", type=int, metavar="JOB", help="job ids")
        parser.add_argument("--year", type=int, help="every job that ended in this year")
        parser.add_argument("--all", action="store_true", help="every ended job")
        parser.add_argument(
            "--periods",
            action="store_true",
            help="only the domain figures of every year and month with statistics",
        )

    def handle(self, *args, jobs, year, all, periods, **options):
        if bool(jobs) + bool(year) + bool(all) + bool(periods) != 1:
            raise CommandError("Give job ids, --year YEAR, --all or --periods (one of them).")
        if periods:
            every = {
                Period(row["year"], month)
                for row in JobStatistics.objects.filter(collection__isnull=True)
                .annotate(month=ExtractMonth("ended_at"))
                .values("year", "month")
                .distinct()
                for month in (0, row["month"])
            }
            self.refresh(every)
            self.stdout.write(f"{len(every)} period(s) refreshed.")
            return
        ended = Job.objects.filter(ended_at__isnull=False)
        if jobs:
            found = set(Job.objects.filter(pk__in=jobs).values_list("pk", flat=True))
            if missing := sorted(set(jobs) - found):
                raise CommandError(f"No job with id {', '.join(map(str, missing))}.")
            open_jobs = sorted(set(jobs) - set(ended.filter(pk__in=jobs).values_list("pk", flat=True)))
            if open_jobs:
                raise CommandError(f"Job {', '.join(map(str, open_jobs))} has not ended: no statistics yet.")
            ended = ended.filter(pk__in=jobs)
        elif year:
            ended = ended.filter(ended_at__year=year)
        count, touched = 0, set()
        for job_id in ended.order_by("pk").values_list("pk", flat=True).iterator():
            whole = job_statistics_compute(job_id=job_id, refresh_periods=False)
            month = timezone.localtime(whole.ended_at).month
            touched.update({Period(whole.year), Period(whole.year, month)})
            count += 1
        self.refresh(touched)  # each period once, not once per job
        self.stdout.write(f"Statistics computed for {count} job(s), {len(touched)} period(s) refreshed.")

    def refresh(self, periods: set[Period]) -> None:
        for period in sorted(periods, key=lambda period: (period.year, period.month)):
            period_statistics_refresh(year=period.year, month=period.month)
