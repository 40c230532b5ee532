"""The navigation bar: areas and the pages in each, filtered by what the user may open.

Apps add their pages to ``AREA_PAGES``; a page is listed to a user who may
enter its area and view its model. Hiding a link is a convenience only: the
views check the same rules (webarchive.permissions).
"""

from dataclasses import dataclass

from django.apps import apps
from django.urls import reverse
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from webarchive.permissions import VIEW, Area, areas_for, can, is_archive_staff


@dataclass(frozen=True)
class Page:
    label: str | Promise
    url_name: str
    model: str | None = None  # "app_label.model": listed only to users who may do ``action`` on it
    action: str = VIEW
    staff: bool = False  # listed only to the people who run the archive, not to readers


AREA_PAGES: dict[Area, list[Page]] = {
    Area.SELECTION: [
        Page(_("Records"), "selection:record_list", "selection.record"),
        Page(_("Collections"), "selection:collection_list", "selection.collection"),
        Page(_("Validation"), "selection:validation_queue", "selection.record", "validate"),
        Page(_("Compatible settings"), "selection:compatibility", "selection.compatibilityrule"),
    ],
    Area.PLANNING: [
        Page(_("Harvest definitions"), "harvest:definition_list", "harvest.harvestdefinition"),
        Page(_("Schedules"), "harvest:schedule_list", "harvest.schedule"),
        Page(_("Domains"), "harvest:domain_list", "harvest.domain"),
        Page(_("Templates"), "harvest:template_list", "harvest.harvesttemplate"),
        Page(_("Global crawler traps"), "harvest:trap_list_list", "harvest.globalcrawlertraplist"),
        Page(_("Channels"), "harvest:channel_list", "harvest.harvestchannel"),
        Page(_("Mappings from selection"), "harvest:mapping_list", "harvest.collectionmapping"),
        Page(_("Transfer"), "harvest:transfer", "harvest.transferreport"),
        # The queue of candidate sites found in the crawls' external links (harvest.views.discovery).
        Page(_("Discovered sites"), "harvest:discovery_index", "harvest.domain"),
        Page(_("Jobs"), "harvest:job_list", "harvest.job"),
        Page(_("Running jobs"), "harvest:job_running", "harvest.job"),
    ],
    Area.OPERATIONS: [
        Page(_("Monitoring"), "harvest:monitoring", "harvest.job"),
        Page(_("Running jobs"), "harvest:job_running", "harvest.job"),
        Page(_("Jobs"), "harvest:job_list", "harvest.job"),
        Page(_("Deduplication"), "storage:dedup_list", "storage.deduprun"),
        Page(_("Storage"), "storage:node_list", "storage.storagenode"),
        Page(_("Broad-crawl preparation"), "harvest:preload_list", "harvest.preloadrun"),
    ],
    Area.REPORTS: [
        Page(_("Dashboard"), "reports:dashboard", "harvest.jobstatistics"),
        Page(_("Statistics"), "reports:statistics", "harvest.jobstatistics"),
        Page(_("Comparisons"), "reports:compare", "harvest.jobstatistics"),
    ],
    Area.ACCESS: [
        Page(_("Reading room"), "storage:reading_room", "storage.capture"),
        Page(_("Search the archive"), "storage:search", "storage.capture"),
        Page(_("Search the text"), "storage:text_search", "storage.capture"),
        Page(_("Access rules"), "storage:accessrule_list", "storage.accessrule"),
        Page(_("Exclusions"), "storage:exclusion_list", "storage.exclusion"),
        Page(_("REST API documentation"), "api-docs", staff=True),
    ],
    Area.ADMIN: [],
}


def area_url(area: Area) -> str:
    if area == Area.ADMIN:
        return reverse("admin:index")
    return reverse("area", kwargs={"area": area.value})


def pages_for(user, area: Area) -> list[dict]:
    return [
        {"label": page.label, "url": reverse(page.url_name)}
        for page in AREA_PAGES[area]
        if (page.model is None or can(user, page.action, apps.get_model(page.model)))
        and (not page.staff or is_archive_staff(user))
    ]


def saved_searches_for(user, area: Area) -> list[dict]:
    """The user's saved record searches, listed under Selection."""
    if area != Area.SELECTION:
        return []
    return [{"label": search.name, "url": search.get_absolute_url()} for search in user.saved_searches.all()]


def menu_for(user) -> list[dict]:
    return [
        {
            "area": area,
            "label": area.label,
            "url": area_url(area),
            "pages": pages_for(user, area),
            "searches": saved_searches_for(user, area),
        }
        for area in areas_for(user)
    ]
