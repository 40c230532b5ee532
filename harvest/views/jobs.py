"""Job pages (Planning and Operations): the list, the running jobs with their live progress, one job
(its sites, crawl log, WARC files, external links and frozen contents), stop and resubmit (engineers).

Progress is read from the database rows the site crawls write every few seconds, never from the
crawlers. The live parts are htmx fragments of the same URLs: a request with the ``HX-Request``
header gets the fragment only, which polls again while its job runs and stops when nothing does.
"""

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.db.models import Case, Count, Sum, Value, When
from django.shortcuts import get_object_or_404, redirect
from django.urls import path
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.generic import View

from harvest.choices import JobStatus
from harvest.filtersets import JobFilterSet, SiteCrawlFilterSet
from harvest.models import ExternalLink, Job
from harvest.monitoring import explain_job_failure, explain_sites
from harvest.selectors import (
    crawl_log_lines,
    crawl_log_sources,
    job_sites,
    job_sites_page,
    job_totals,
    jobs_with_totals,
)
from harvest.services.crawls import job_stop
from harvest.services.jobs import JOB_TRANSITIONS, job_resubmit
from harvest.tables import JobTable
from webarchive.forms import add_bootstrap_classes
from webarchive.patterns import PatternError, compile_user_pattern
from webarchive.permissions import CHANGE, Area, permitted
from webarchive.views import (
    AreaRequiredMixin,
    ObjectDetailView,
    ObjectListView,
    PermittedActionsMixin,
    htmx_response,
    safe_next_url,
)

ENTRIES_PER_PAGE = 50
SITES_PER_PAGE = 50
LOG_LINES = 500  # crawl log lines shown by a search
SHOWN_DOMAINS = 1000  # domains offered to the crawl log search
SHOWN_WARC_FILES = 200
SHOWN_EXTERNAL_LINKS = 50
ACTIVE = (JobStatus.SUBMITTED, JobStatus.STARTED)  # the statuses whose progress is polled
SITE_CURSORS = (
    "sites_after",
    "sites_before",
)  # the keys of a page of sites (harvest.selectors.job_sites_page)
SITE_QUERY = ("state", "domain", "stop_reason", *SITE_CURSORS)  # what the sites fragment is about


@dataclass(frozen=True)
class Bar:
    """A progress bar: ``done`` of ``total``."""

    done: int
    total: int

    @property
    def percent(self) -> int:
        return min(100, self.done * 100 // self.total) if self.total > 0 else 0


def url_bar(done: int, queued: int) -> Bar:
    return Bar(done, done + queued)


def job_bars(totals: dict) -> dict:
    """A job's two bars from its :func:`site_totals`: URLs done of done and queued, sites ended of all."""
    return {
        "url_bar": url_bar(totals["urls_done"], totals["urls_queued"]),
        "site_bar": Bar(totals["sites_ended"], totals["sites_total"]),
    }


def job_actions(job: Job, allowed: dict[str, bool]) -> dict[str, bool]:
    """What the buttons of a job may offer now: the user's permission (``allowed``, the page's
    ``permitted``) and the job's state. A job is stopped while it is submitted or running, once;
    it is resubmitted when its transition table (JOB_TRANSITIONS) allows it."""
    may_change = allowed.get(CHANGE, False)
    steer = may_change and job.status in ACTIVE and job.stop_requested_at is None
    return {
        "stop": steer,
        "resubmit": may_change and JobStatus.RESUBMITTED in JOB_TRANSITIONS[job.status],
        # Steering (harvest.views.steering): pause or resume it, its sites, their rules and budgets.
        "steer": steer,
        "pause": steer and job.paused_at is None,
        "resume": steer and job.paused_at is not None,
    }


# Pages -----------------------------------------------------------------------------------------


class JobListView(ObjectListView):
    area = Area.PLANNING
    queryset = Job.objects.select_related("harvest_definition", "channel")
    filterset_class = JobFilterSet
    table_class = JobTable
    template_name = "harvest/job_list.html"


class RunningJobsView(PermittedActionsMixin, ObjectListView):
    """Submitted and started jobs with their live progress; the table body polls every 3 s while any runs.

    Its table is its own (``harvest/job_running_rows.html``): the body is the htmx fragment that polls.
    """

    area = Area.PLANNING
    # The totals are not annotated here (a sum over every site crawl of every active job): each job
    # of the page gets them from its counters and its running sites (harvest.selectors.jobs_with_totals).
    queryset = (
        Job.objects.filter(status__in=ACTIVE)
        .select_related("harvest_definition")
        .defer("template_settings", "crawler_traps")
        .annotate(status_rank=Case(When(status=JobStatus.STARTED, then=Value(0)), default=Value(1)))
        .order_by("status_rank", "pk")
    )
    template_name = "harvest/job_running.html"
    actions = (CHANGE,)

    def get_template_names(self):
        return ["harvest/job_running_rows.html" if self.request.htmx else self.template_name]

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["object_list"] = jobs_with_totals(context["object_list"])
        for job in context["object_list"]:
            job.url_bar = url_bar(job.urls_done, job.urls_queued)
            job.site_bar = Bar(job.sites_ended, job.sites_total)
            job.available = job_actions(job, context["permitted"])
        return context

    def render_to_response(self, context, **kwargs):
        return htmx_response(self.request, super().render_to_response(context, **kwargs))


class JobDetailView(PermittedActionsMixin, ObjectDetailView):
    area = Area.PLANNING
    queryset = Job.objects.select_related(
        "harvest_definition", "run", "channel", "template", "resubmitted_as", "continuation_of"
    )
    template_name = "harvest/job_detail.html"
    actions = (CHANGE,)
    fields = [
        "status",
        "channel",
        "queue",
        "domain_count",
        "expected_objects",
        "max_seconds",
        "created_at",
        "submitted_at",
        "dispatched_at",
        "started_at",
        "stop_requested_at",
        "ended_at",
        "errors",
    ]

    def get_template_names(self):
        return ["harvest/job_sites.html" if self.request.htmx else self.template_name]

    def render_to_response(self, context, **kwargs):
        response = super().render_to_response(context, **kwargs)
        if context.get("log_refused"):
            response.status_code = 400  # the page, with the crawl log search saying what is wrong
        return htmx_response(self.request, response)

    def get_context_data(self, **kwargs):
        if self.request.htmx:  # the live sites fragment only (with the buttons, swapped out of band)
            allowed = permitted(self.request.user, self.object, self.actions)
            return {"object": self.object, "permitted": allowed, **self.sites_context(allowed)}
        context = super().get_context_data(**kwargs)
        job = self.object
        entries = job.configurations.select_related("domain", "configuration").order_by(
            "-expected_objects", "pk"
        )
        warc_files = job.warc_files.order_by("created_at", "name")
        context.update(
            {
                "entry_page": Paginator(entries, ENTRIES_PER_PAGE).get_page(self.request.GET.get("page")),
                "settings_rows": sorted((job.template_settings or {}).items()),
                "resubmission_of": Job.objects.filter(resubmitted_as=job).first(),
                "explanation": explain_job_failure(job),
                "warc_files": warc_files[:SHOWN_WARC_FILES],
                "warc_totals": warc_files.aggregate(count=Count("pk"), size=Sum("size")),
                "external_links": ExternalLink.objects.filter(entry__job=job)
                .select_related("entry__domain")
                .order_by("-count", "url")[:SHOWN_EXTERNAL_LINKS],
                **self.sites_context(context["permitted"]),
                **self.crawl_log_context(),
                # Where storage workers write the job's WACZ (storage.services.wacz.job_wacz_path).
                "wacz_ready": (Path(settings.STORAGE_WACZ_DIR) / f"job-{job.pk}.wacz").is_file(),
            }
        )
        return context

    def sites_context(self, allowed: dict[str, bool]) -> dict:
        """The live part: the job's totals, a page of its sites, and what the buttons may do."""
        job, request = self.object, self.request
        totals = job_totals(job)
        totals.update(job_bars(totals))
        filterset = SiteCrawlFilterSet(request.GET, queryset=job_sites(job), request=request)
        add_bootstrap_classes(filterset.form, small=True)
        sites = filterset.qs if filterset.is_valid() else job_sites(job).none()
        # By keyset, not by page number: no count and no offset over the job's thousands of sites.
        page = job_sites_page(
            sites,
            after=request.GET.get("sites_after", ""),
            before=request.GET.get("sites_before", ""),
            size=SITES_PER_PAGE,
        )
        for entry, explanation in zip(page.sites, explain_sites(page.sites), strict=True):
            entry.bar = url_bar(entry.urls_done, entry.urls_queued)
            entry.explanation = explanation  # why it failed or was cut short, in plain words
        query = [(key, value) for key in SITE_QUERY for value in request.GET.getlist(key)]
        return {
            "totals": totals,
            "site_filter": filterset,
            "site_page": page,
            "site_paged": any(key in request.GET for key in SITE_CURSORS),
            "site_query": urlencode([(k, v) for k, v in query if k not in SITE_CURSORS]),
            "poll_url": f"{request.path}?{urlencode(query)}" if query else request.path,
            "live": job.status in ACTIVE,
            "available": job_actions(job, allowed),
        }

    def crawl_log_context(self) -> dict:
        """The crawl log search: the job's domains to choose from and, when asked, the lines found."""
        job, query = self.object, self.request.GET
        # The names to choose from, for a job of at most SHOWN_DOMAINS sites only: sorting a large
        # job's names joins thousands of domains on every view; its engineers type the name instead.
        names = job.configurations.order_by("domain__name").values_list("domain__name", flat=True)
        context = {
            "log_domains": names if job.domain_count <= SHOWN_DOMAINS else names.none(),
            "log_domain": query.get("log_domain", "").strip().lower(),
            "log_pattern": query.get("log_pattern", ""),
            "log_searched": "log_domain" in query or "log_pattern" in query,
            "log_limit": LOG_LINES,
        }
        if context["log_searched"]:
            context.update(crawl_log_search(job, site=context["log_domain"], pattern=context["log_pattern"]))
        return context


def crawl_log_search(job: Job, *, site: str, pattern: str) -> dict:
    """At most LOG_LINES lines of the job's crawl log for ``site`` matching ``pattern``, or why none."""
    from harvest.crawler.crawllog import search  # plain Python, loaded only when a log is searched

    regex = None
    if pattern:
        try:
            regex = compile_user_pattern(pattern)  # RE2: linear time, whatever the pattern
        except PatternError as error:
            return {"log_error": str(error), "log_refused": True}
    if not crawl_log_sources(job.pk):
        return {"log_missing": True}
    try:
        lines = list(search(crawl_log_lines(job.pk), site=site, pattern=regex, limit=LOG_LINES))
    except OSError as error:
        reason = error.strerror or str(error)
        return {"log_error": _("The crawl log could not be read: %(error)s.") % {"error": reason}}
    return {"log_lines": lines}


def _back(request, job: Job) -> str:
    """Where a button sends the user back: the page it was on (``next``), else the job."""
    return safe_next_url(request, job)


class JobActionView(AreaRequiredMixin, View):
    """POST: one engineer's action on a job; a refusal is shown as the service words it."""

    area = Area.PLANNING
    model_permission = (CHANGE, Job)

    def act(self, request, job: Job) -> tuple[str, str]:
        """Do it; return where to go next and what to say."""
        raise NotImplementedError

    def post(self, request, pk):
        job = get_object_or_404(Job, pk=pk)
        try:
            target, text = self.act(request, job)
        except ValidationError as error:
            for message in error.messages:
                messages.error(request, message)
            return redirect(_back(request, job))
        messages.success(request, text)
        return redirect(target)


class JobStopView(JobActionView):
    """Stop a submitted or running job (engineers); queued sites end at once, running ones soon."""

    permission_denied_message = gettext_lazy("Only crawl engineers may stop jobs.")

    def act(self, request, job):
        job = job_stop(job=job, user=request.user)
        if job.status in ACTIVE:
            text = _("%(job)s is stopping: its queued sites ended, its running sites stop within seconds.")
        else:
            text = _("%(job)s was stopped.")
        return _back(request, job), text % {"job": job}


class JobResubmitView(JobActionView):
    """Run a failed (or never started) job again as a new job (engineers)."""

    permission_denied_message = gettext_lazy("Only crawl engineers may resubmit jobs.")

    def act(self, request, job):
        copy = job_resubmit(job=job, user=request.user)
        return copy.get_absolute_url(), _("%(job)s was resubmitted as %(copy)s.") % {"job": job, "copy": copy}


urlpatterns = [
    path("jobs/", JobListView.as_view(), name="job_list"),
    path("jobs/running/", RunningJobsView.as_view(), name="job_running"),
    path("jobs/<int:pk>/", JobDetailView.as_view(), name="job_detail"),
    path("jobs/<int:pk>/stop/", JobStopView.as_view(), name="job_stop"),
    path("jobs/<int:pk>/resubmit/", JobResubmitView.as_view(), name="job_resubmit"),
]
