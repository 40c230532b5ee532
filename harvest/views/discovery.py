"""Discovered sites (Planning): each collection's queue of candidate sites, the curators' decisions
on them (propose as a record, add as a domain, dismiss, undo) and the blacklist."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import path, reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views import View

from harvest.models import DiscoveredSite, DiscoveryBlock, DiscoveryDecision, Domain
from harvest.selectors_discovery import (
    LANGUAGE_TLDS,
    OTHER_SITE_WEIGHT,
    OWN_SITE_WEIGHT,
    PAGES_COUNTED,
    decisions,
    discovery_queue,
    linking,
    site_url,
)
from harvest.services.discovery import (
    discovered_site_add_domain,
    discovered_site_dismiss,
    discovered_site_propose,
    discovery_block_add,
    discovery_block_remove,
    discovery_decision_undo,
)
from selection.models import Collection
from selection.urlcheck import check_url
from webarchive.permissions import CHANGE, Area, can
from webarchive.views import AreaRequiredMixin

PER_PAGE = 25
CURATORS_ONLY = gettext_lazy("Only curators may decide on discovered sites.")


def _text(request, name: str, limit: int) -> str:
    return " ".join(request.GET.get(name, "").split())[:limit].lower()


class DiscoveryIndexView(AreaRequiredMixin, View):
    """The collections, each with a link to its queue of discovered sites."""

    area = Area.PLANNING

    def get(self, request):
        return render(
            request,
            "harvest/discovery_index.html",
            {"collections": Collection.objects.order_by("name"), "total": DiscoveredSite.objects.count()},
        )


class DiscoveryQueueView(AreaRequiredMixin, View):
    """One collection's candidates, best first, with the pages linking to them; filters by TLD,
    language (from the TLD) and name."""

    area = Area.PLANNING

    def get(self, request, pk):
        collection = get_object_or_404(Collection, pk=pk)
        filters = {
            "tld": _text(request, "tld", 63),
            "language": _text(request, "language", 8),
            "search": _text(request, "q", 100),
        }
        if filters["language"] not in LANGUAGE_TLDS:
            filters["language"] = ""
        page = Paginator(discovery_queue(collection, **filters), PER_PAGE).get_page(request.GET.get("page"))
        sites = list(page.object_list)
        links = linking(sites, collection)
        # Sites the archive has as domains already: harvested by snapshots, nothing to add.
        domains = set(
            Domain.objects.filter(name__in=[site.registered_domain for site in sites]).values_list(
                "name", flat=True
            )
        )
        for site in sites:
            site.is_domain = site.registered_domain in domains
            site.linking = links[site.pk]
            site.proposed_url = site_url(site, site.linking)
        return render(
            request,
            "harvest/discovery_queue.html",
            {
                "collection": collection,
                "page": page,
                "sites": sites,
                "filters": filters,
                "languages": sorted(LANGUAGE_TLDS),
                "themes": collection.themes.filter(is_active=True).order_by("name"),
                "decisions": decisions(collection)[:50],
                "weights": {"own": OWN_SITE_WEIGHT, "other": OTHER_SITE_WEIGHT, "pages": PAGES_COUNTED},
                "may_decide": _may_decide(request.user),
            },
        )


def _may_decide(user) -> bool:
    return can(user, CHANGE, Collection)


class DiscoveryActionView(AreaRequiredMixin, View):
    """POST on one candidate of a collection: ``check`` (live URL check), ``propose``, ``domain``,
    ``dismiss``. A refusal is shown as the service words it and changes nothing."""

    area = Area.PLANNING
    model_permission = (CHANGE, Collection)
    permission_denied_message = CURATORS_ONLY

    def post(self, request, pk, site, action):
        collection = get_object_or_404(Collection, pk=pk)
        candidate = get_object_or_404(DiscoveredSite, pk=site)
        back = reverse("harvest:discovery_queue", args=[collection.pk])
        try:
            text = self.act(request, action, collection, candidate)
        except ValidationError as error:
            for message in error.messages:
                messages.error(request, message)
            return redirect(back)
        messages.success(request, text)
        return redirect(back)

    def act(self, request, action, collection, site) -> str:
        url = request.POST.get("url", "").strip()[:2000]
        if action == "check":
            result = check_url(url or site_url(site))
            return _("Live check of %(url)s: %(result)s") % {
                "url": url or site_url(site),
                "result": result.message,
            }
        if action == "propose":
            theme = collection.themes.filter(pk=_int(request.POST.get("theme"))).first()
            record = discovered_site_propose(
                user=request.user,
                collection=collection,
                site=site,
                theme=theme,
                url=url or site_url(site),
                check_override_reason=request.POST.get("check_override_reason", "")[:1000],
            )
            return _("%(url)s is proposed in %(collection)s (record #%(pk)s).") % {
                "url": record.url,
                "collection": collection,
                "pk": record.pk,
            }
        if action == "domain":
            domain = discovered_site_add_domain(user=request.user, collection=collection, site=site)
            return _("%(domain)s is a domain now: the next snapshot harvests it.") % {"domain": domain}
        if action == "dismiss":
            discovered_site_dismiss(user=request.user, collection=collection, site=site)
            return _("%(domain)s is dismissed: it is no longer proposed for %(collection)s.") % {
                "domain": site,
                "collection": collection,
            }
        raise ValidationError(_("Unknown action."))


def _int(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


class DiscoveryUndoView(AreaRequiredMixin, View):
    """POST: undo a dismissal; the site comes back to its collection's queue."""

    area = Area.PLANNING
    model_permission = (CHANGE, Collection)
    permission_denied_message = CURATORS_ONLY

    def post(self, request, pk):
        decision = get_object_or_404(DiscoveryDecision, pk=pk)
        try:
            discovery_decision_undo(user=request.user, decision=decision)
        except ValidationError as error:
            for message in error.messages:
                messages.error(request, message)
        else:
            messages.success(
                request, _("%(domain)s is back in the queue.") % {"domain": decision.registered_domain}
            )
        return redirect("harvest:discovery_queue", decision.collection_id)


class DiscoveryBlacklistView(AreaRequiredMixin, View):
    """The blacklist: domains and suffixes never proposed; curators add and remove entries."""

    area = Area.PLANNING

    def get(self, request, form_errors=None, status=200):
        return render(
            request,
            "harvest/discovery_blacklist.html",
            {
                "blocks": DiscoveryBlock.objects.select_related("created_by"),
                "may_decide": _may_decide(request.user),
                "form_errors": form_errors or [],
                "typed": request.POST.get("pattern", "")[:255],
            },
            status=status,
        )

    def post(self, request):
        if not _may_decide(request.user):
            raise PermissionDenied(CURATORS_ONLY)
        try:
            block = discovery_block_add(
                user=request.user,
                pattern=request.POST.get("pattern", "")[:1000],
                reason=request.POST.get("reason", "")[:1000],
            )
        except ValidationError as error:
            return self.get(request, form_errors=error.messages, status=400)
        messages.success(request, _("%(pattern)s is blacklisted.") % {"pattern": block.pattern})
        return redirect("harvest:discovery_blacklist")


class DiscoveryBlockRemoveView(AreaRequiredMixin, View):
    area = Area.PLANNING
    model_permission = (CHANGE, Collection)
    permission_denied_message = CURATORS_ONLY

    def post(self, request, pk):
        block = get_object_or_404(DiscoveryBlock, pk=pk)
        discovery_block_remove(user=request.user, block=block)
        messages.success(request, _("%(pattern)s is no longer blacklisted.") % {"pattern": block.pattern})
        return redirect("harvest:discovery_blacklist")


urlpatterns = [
    path("discovered/", DiscoveryIndexView.as_view(), name="discovery_index"),
    path("discovered/blacklist/", DiscoveryBlacklistView.as_view(), name="discovery_blacklist"),
    path(
        "discovered/blacklist/<int:pk>/remove/",
        DiscoveryBlockRemoveView.as_view(),
        name="discovery_block_remove",
    ),
    path("discovered/collections/<int:pk>/", DiscoveryQueueView.as_view(), name="discovery_queue"),
    path(
        "discovered/collections/<int:pk>/sites/<int:site>/<slug:action>/",
        DiscoveryActionView.as_view(),
        name="discovery_action",
    ),
    path("discovered/decisions/<int:pk>/undo/", DiscoveryUndoView.as_view(), name="discovery_undo"),
]
