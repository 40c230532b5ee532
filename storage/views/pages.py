"""The Access pages: search the archive by URL, a capture (its headers, replay, the raw record), a WARC
file, and the captures of one job or one domain; and a screenshot the crawler made, as an image.

Every page is in the Access area and needs the view permission on captures (webarchive.permissions);
the queries are in :mod:`storage.selectors`. Times are shown in the site's time zone, as everywhere;
the 14-digit timestamps (UTC, as in the index and replay addresses) are shown as they are.
"""

from __future__ import annotations

import re
from datetime import date
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, StreamingHttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import path, reverse
from django.utils import timezone
from django.utils.decorators import method_decorator
from django.utils.translation import gettext as _
from django.views.generic import DetailView, TemplateView, View
from django.views.generic.detail import SingleObjectMixin

from harvest.models import Domain, HarvestDefinition, Job
from storage import access, selectors
from storage.filtersets import CaptureFilterSet
from storage.forms import CaptureSearchForm, MatchType
from storage.models import Capture, WarcFile
from storage.replay import replay_url
from storage.tables import CaptureTable, CaptureUrlTable
from storage.warcindex import cdx_mime
from webarchive.permissions import DOWNLOAD, VIEW, Area, can, can_enter, is_archive_staff, permitted, restrict
from webarchive.views import AreaRequiredMixin, ObjectListView, RestrictedQuerysetMixin

CAPTURES_PER_PAGE = 100
URLS_PER_PAGE = 100  # distinct URLs of a prefix search per page
MONTH_HEADS = [date(2000, month, 1) for month in range(1, 13)]  # the calendar's columns
SCREENSHOT_MIME = "image/png"  # the only images the image view serves
ARCHIVE_SUFFIXES = (".warc.gz", ".warc", ".arc.gz", ".arc")
_DOMAIN_LABEL = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)$")


PLANNING_PAGES = {"job": Job, "definition": HarvestDefinition, "domain": Domain}


def planning_links(user) -> dict[str, bool]:
    """Which Planning pages an Access page links to for the user (``planning.job``…): those of the
    area the user may enter, of the objects the user may view."""
    planner = can_enter(user, Area.PLANNING)
    return {name: planner and permitted(user, model, [VIEW])[VIEW] for name, model in PLANNING_PAGES.items()}


def with_replay(captures):
    """The captures, each given its replay address (``capture.replay``)."""
    for capture in captures:
        capture.replay = replay_url(capture.url, capture.timestamp14)
    return captures


class AccessAreaMixin(AreaRequiredMixin):
    """Access area, and the view permission on captures; ``staff_only`` pages (a WARC file, the
    captures of a job or a domain) are for the people who run the archive, not for readers."""

    area = Area.ACCESS
    model_permission = (VIEW, Capture)
    staff_only = False

    def dispatch(self, request, *args, **kwargs):
        if self.staff_only and request.user.is_authenticated and not is_archive_staff(request.user):
            raise PermissionDenied(_("This page is for the archive's staff."))
        return super().dispatch(request, *args, **kwargs)


@method_decorator(login_not_required, name="dispatch")
class ReadingMixin(AccessAreaMixin):
    """A page of the archive readers read (search, a capture, the reading room): anonymous visitors
    too when the site allows anonymous reading (``ACCESS_ANONYMOUS``), who see what is open."""

    def dispatch(self, request, *args, **kwargs):
        if request.user.is_authenticated:
            return super().dispatch(request, *args, **kwargs)
        if not settings.ACCESS_ANONYMOUS:
            return redirect_to_login(request.get_full_path())
        return View.dispatch(self, request, *args, **kwargs)  # no role to check: restrict() decides

    def get_queryset(self):
        # Captures are narrowed for everyone by restrict() (anonymous visitors included).
        return restrict(super(RestrictedQuerysetMixin, self).get_queryset(), self.request.user)


# Search ---------------------------------------------------------------------------------------------


class SearchView(ReadingMixin, TemplateView):
    """The captures of a URL by year and month, or the URLs under a prefix with their capture counts."""

    template_name = "storage/search.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        query = self.request.GET
        data = None
        if "url" in query or "match" in query:
            data = query.copy()
            data.setdefault("match", MatchType.EXACT)  # shown checked, as the search is made
        form = CaptureSearchForm(data)
        context["form"] = form
        if form.is_bound and form.is_valid():
            captures = restrict(Capture.objects.all(), self.request.user)
            url, match = form.cleaned_data["url"], form.cleaned_data["match"]
            context.update({"match": match, "month_heads": MONTH_HEADS})
            if match == MatchType.PREFIX:
                context.update(self.prefix_results(captures, url))
            else:
                context.update(self.exact_results(captures, url))
        return context

    def exact_results(self, captures, url: str) -> dict:
        key = selectors.exact_key(url)
        captures = captures.filter(urlkey=key)
        years = selectors.captures_by_month(captures)
        results = {"key": key, "years": years, "total": sum(year.count for year in years)}
        if not years:
            return results
        year, month = self.period(years)
        page = Paginator(selectors.period_captures(captures, year, month), CAPTURES_PER_PAGE).get_page(
            self.request.GET.get("page")
        )
        months = {(item.year, item.month): item for entry in years for item in entry.months.values()}
        groups: list[dict] = []  # the page's captures under their month, as the counts have them
        for capture in with_replay(page.object_list):
            stamp = timezone.localtime(capture.timestamp)  # the month the counts put it in
            period = months[(stamp.year, stamp.month)]
            if not groups or groups[-1]["month"] is not period:
                groups.append({"month": period, "captures": []})
            groups[-1]["captures"].append(capture)
        for group in groups:
            group["table"] = CaptureTable(group["captures"], model=Capture)
        results.update(
            {
                "year": year,
                "month": month,
                "period_count": months[(year, month)].count
                if month
                else next(entry.count for entry in years if entry.year == year),
                "month_groups": groups,
                "page_obj": page,
                "paginator": page.paginator,
                "is_paginated": page.has_other_pages(),
            }
        )
        return results

    def period(self, years: list[selectors.YearCount]) -> tuple[int, int | None]:
        """The year (and month) whose captures are listed: the one asked for, else the latest year."""
        by_year = {entry.year: entry for entry in years}
        year = _integer(self.request.GET.get("year"))
        if year not in by_year:
            return years[0].year, None
        month = _integer(self.request.GET.get("month"))
        return year, month if month in by_year[year].months else None

    def prefix_results(self, captures, url: str) -> dict:
        start, end = selectors.prefix_key_range(url)
        after = self.request.GET.get("after", "")
        if not (start <= after < end):
            after = ""
        rows = selectors.url_summaries(
            captures.filter(urlkey__gte=start, urlkey__lt=end), after=after, limit=URLS_PER_PAGE
        )
        more = len(rows) > URLS_PER_PAGE
        rows = rows[:URLS_PER_PAGE]
        return {
            "key": start,
            "url_rows": rows,
            "after": after,
            "next_after": rows[-1]["urlkey"] if more else "",
            "urls_per_page": URLS_PER_PAGE,
        }


def search_link(url: str, match: str = MatchType.EXACT) -> str:
    """The search page's address for ``url``."""
    return f"{reverse('storage:search')}?{urlencode({'url': url, 'match': match})}"


def _integer(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


# One capture ----------------------------------------------------------------------------------------


class CaptureDetailView(ReadingMixin, RestrictedQuerysetMixin, DetailView):
    """A capture: where it is, what it is, its headers read from its file, the access rule that lets
    the reader read it, and where to replay it. A capture the reader may not read is not found."""

    queryset = Capture.objects.select_related("warc_file", "job__harvest_definition").defer(
        "job__template_settings", "job__crawler_traps"
    )
    template_name = "storage/capture_detail.html"
    context_object_name = "capture"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        capture, user = self.object, self.request.user
        try:
            context["headers"] = selectors.capture_headers(capture)
        except selectors.RecordUnavailable as error:
            context["headers_error"] = str(error)
        captures = restrict(Capture.objects.all(), user)
        context["previous"], context["next"] = selectors.capture_neighbours(capture, captures)
        context.update(
            {
                "replay": replay_url(capture.url, capture.timestamp14),
                "same_url_count": captures.filter(urlkey=capture.urlkey).count(),
                "search_url": search_link(capture.url),
                "planning": planning_links(user),
                "decision": access.capture_decision(capture, access.viewer_of_request(self.request)),
                "staff": is_archive_staff(user),
                "may_download": can(user, DOWNLOAD, WarcFile),
            }
        )
        return context


class CaptureRawView(AccessAreaMixin, RestrictedQuerysetMixin, SingleObjectMixin, View):
    """The capture's record as stored (decompressed), as a download, for those who may download WARC
    bytes (engineers); a file not on disk is a 503 page."""

    queryset = Capture.objects.select_related("warc_file")
    model_permission = (DOWNLOAD, WarcFile)
    permission_denied_message = _("Downloading records as stored is for crawl engineers.")

    def get(self, request, *args, **kwargs):
        capture = self.get_object()
        try:
            content = selectors.RecordBytes(capture)
        except selectors.RecordUnavailable as error:
            return record_unavailable(request, capture, error)
        response = StreamingHttpResponse(content, content_type=raw_content_type(capture.warc_file.name))
        response["Content-Disposition"] = f'attachment; filename="{raw_filename(capture)}"'
        response["X-Content-Type-Options"] = "nosniff"
        return response


class CaptureImageView(AccessAreaMixin, RestrictedQuerysetMixin, SingleObjectMixin, View):
    """A PNG the crawler made (a ``resource`` record, e.g. a rendered page's screenshot), as the image.

    Only resource records indexed as image/png, whose record says image/png too: anything else the
    archive holds is crawled content, never served from the application's origin (404). The image
    cannot run anything (``nosniff``, a CSP that allows nothing); a file not on disk is a 503 page.
    """

    staff_only = True  # the quality view's screenshots
    queryset = Capture.objects.select_related("warc_file").filter(
        record_type=Capture.RecordType.RESOURCE, mime=SCREENSHOT_MIME
    )

    def get(self, request, *args, **kwargs):
        capture = self.get_object()
        try:
            payload = selectors.RecordPayload(capture)
        except selectors.RecordUnavailable as error:
            return record_unavailable(request, capture, error)
        if cdx_mime(payload.content_type).lower() != SCREENSHOT_MIME:
            payload.close()
            raise Http404(_("This capture is not an image the crawler made."))
        response = StreamingHttpResponse(payload, content_type=SCREENSHOT_MIME)
        name = raw_filename(capture).rpartition(".")[0]
        response["Content-Disposition"] = f'inline; filename="{name}.png"'
        response["X-Content-Type-Options"] = "nosniff"
        response["Content-Security-Policy"] = "default-src 'none'; sandbox"
        response["Cache-Control"] = "private, max-age=3600"
        return response


def record_unavailable(request, capture: Capture, error: Exception):
    """The page that says a capture's WARC file cannot be read now (503)."""
    return render(
        request, "storage/record_unavailable.html", {"capture": capture, "reason": str(error)}, status=503
    )


def _archive_stem(name: str) -> tuple[str, str]:
    """A file name without its archive suffix, and the kind (``warc`` or ``arc``)."""
    for suffix in ARCHIVE_SUFFIXES:
        if name.endswith(suffix):
            return name.removesuffix(suffix), suffix.split(".")[1]
    return name, "warc"


def raw_filename(capture: Capture) -> str:
    """``{file name without .warc.gz}-{offset}.warc``: which file and where, for whoever gets the download."""
    stem, kind = _archive_stem(capture.warc_file.name)
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", stem)
    return f"{stem}-{capture.offset}.{kind}"


def raw_content_type(name: str) -> str:
    return "application/x-arc" if _archive_stem(name)[1] == "arc" else "application/warc"


# A WARC file ----------------------------------------------------------------------------------------


class WarcFileDetailView(AccessAreaMixin, RestrictedQuerysetMixin, DetailView):
    """A file of the archive: name, origin, where it is, size, checksum, its job, and its captures."""

    staff_only = True
    queryset = WarcFile.objects.select_related("job__harvest_definition").defer(
        "job__template_settings", "job__crawler_traps"
    )
    template_name = "storage/warcfile_detail.html"
    context_object_name = "warc_file"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        warc_file, user = self.object, self.request.user
        captures = restrict(Capture.objects.filter(warc_file=warc_file), user).order_by("offset", "pk")
        page = Paginator(captures, CAPTURES_PER_PAGE).get_page(self.request.GET.get("page"))
        with_replay(page.object_list)
        for capture in page.object_list:
            capture.warc_file = warc_file  # spare a query per row
        location = warc_file.location()
        # A path of another machine's spool means nothing here: never looked for on this one.
        here = not warc_file.machine or warc_file.machine == settings.MACHINE_NAME
        context.update(
            {
                "location": location,
                "on_disk": location.exists() if here else None,
                "page_obj": page,
                "paginator": page.paginator,
                "is_paginated": page.has_other_pages(),
                "capture_table": CaptureUrlTable(page.object_list, model=Capture),
                "planning": planning_links(user),
            }
        )
        return context


# Captures of a job, of a domain ---------------------------------------------------------------------


class CaptureListView(AccessAreaMixin, ObjectListView):
    """A paginated, filterable table of captures in key order, with their counts by MIME type and status."""

    template_name = "storage/capture_list.html"
    staff_only = True
    filterset_class = CaptureFilterSet
    table_class = CaptureUrlTable
    paginate_by = CAPTURES_PER_PAGE

    def scope(self):
        """The captures this page is about (all of them, before the filters)."""
        raise NotImplementedError

    def get_queryset(self):
        self.queryset = self.scope().select_related("warc_file").order_by("urlkey", "timestamp", "pk")
        return super().get_queryset()

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        with_replay(context["object_list"])  # the table's rows are these captures (drawn later)
        context["counts"] = selectors.capture_counts(restrict(self.scope(), self.request.user))
        return context


class JobCapturesView(CaptureListView):
    """The captures a job made."""

    def scope(self):
        return Capture.objects.filter(job=self.job)

    def get(self, request, *args, **kwargs):
        self.job = get_object_or_404(
            Job.objects.select_related("harvest_definition").defer("template_settings", "crawler_traps"),
            pk=kwargs["pk"],
        )
        return super().get(request, *args, **kwargs)

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context.update(
            {
                "job": self.job,
                "title": _("Captures of %(job)s") % {"job": self.job},
                "planning": planning_links(self.request.user),
            }
        )
        return context


class DomainCapturesView(CaptureListView):
    """The captures of a host and its subdomains, whether or not it is a domain of the planning side."""

    def scope(self):
        return Capture.objects.filter(selectors.domain_filter(self.domain_name))

    def get(self, request, *args, **kwargs):
        self.domain_name = domain_name(kwargs["name"])
        return super().get(request, *args, **kwargs)

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        planning = planning_links(self.request.user)
        domain = Domain.objects.filter(name=self.domain_name).first() if planning["domain"] else None
        context.update(
            {
                "domain_name": self.domain_name,
                "domain": domain,
                "title": _("Captures of %(domain)s and its subdomains") % {"domain": self.domain_name},
            }
        )
        return context


def domain_name(text: str) -> str:
    """A host name from the address (lower case, IDN in punycode); 404 when it is not one."""
    name = text.strip().lower().rstrip(".")
    try:
        name = name.encode("idna").decode("ascii")
    except UnicodeError:
        name = ""
    if not name or not all(_DOMAIN_LABEL.match(label) for label in name.split(".")):
        raise Http404(_("“%(name)s” is not a domain name.") % {"name": text})
    return name


urlpatterns = [
    path("search/", SearchView.as_view(), name="search"),
    path("captures/<int:pk>/", CaptureDetailView.as_view(), name="capture_detail"),
    path("captures/<int:pk>/raw/", CaptureRawView.as_view(), name="capture_raw"),
    path("captures/<int:pk>/image/", CaptureImageView.as_view(), name="capture_image"),
    path("files/<int:pk>/", WarcFileDetailView.as_view(), name="warcfile_detail"),
    path("jobs/<int:pk>/captures/", JobCapturesView.as_view(), name="job_captures"),
    path("domains/<str:name>/captures/", DomainCapturesView.as_view(), name="domain_captures"),
]
