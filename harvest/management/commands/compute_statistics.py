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
        " (--periods: every year and month, every year together, and each harvest definition's years;"
        " after an upgrade, or a change of REPORT_SIZE_CLASSES)."
    )

    def add_arguments(self, parser):
        parser.add_argument("jobs", nargs="*", type=int, metavar="JOB", help="job ids")
        parser.add_argument("--year", type=int, help="every job that ended in this year")
        parser.add_argument("--all", action="store_true", help="every ended job")
        parser.add_argument(
            "--periods",
            action="store_true",
            help="only the domain figures of every year and month with statistics, of every year, and of"
            " each harvest definition (every year and each year)",
        )

    def handle(self, *args, jobs, year, all, periods, **options):
        if bool(jobs) + bool(year) + bool(all) + bool(periods) != 1:
            raise CommandError("Give job ids, --year YEAR, --all or --periods (one of them).")
        if periods:
            whole = JobStatistics.objects.filter(collection__isnull=True)
            every = {
                Period(row["year"], month)
                for row in whole.annotate(month=ExtractMonth("ended_at")).values("year", "month").distinct()
                for month in (0, row["month"])
            }
            definitions = {
                Period(year, 0, row["harvest_definition"])
                for row in whole.values("harvest_definition", "year").distinct()
                for year in (0, row["year"])
            }
            if every:
                every.add(Period())
            self.refresh(every | definitions)
            self.stdout.write(f"{self.counted(every | definitions)} refreshed.")
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
            touched.update(
                {
                    Period(whole.year),
                    Period(whole.year, month),
                    Period(whole.year, 0, whole.harvest_definition_id),
                }
            )
            count += 1
        self.refresh(touched)  # each period once, not once per job
        self.stdout.write(f"Statistics computed for {count} job(s), {self.counted(touched)} refreshed.")

    @staticmethod
    def counted(periods: set[Period]) -> str:
        definitions = sum(1 for period in periods if period.definition)
        return f"{len(periods) - definitions} period(s) and {definitions} harvest definition period(s)"

    def refresh(self, periods: set[Period]) -> None:
        for period in sorted(periods, key=lambda period: (period.definition, period.year, period.month)):
            period_statistics_refresh(year=period.year, month=period.month, definition=period.definition)
