"""The reading room: the readers' plain entry page to the archive.

Search by URL, then the collections the reader may read, each with its records' URLs as entry points
(NetarchiveSuite's "guided tours"): how many captures of each the reader may read, the first and the
last, the captures by date (the search page) and the latest in replay. Open to readers and staff, and
to anonymous visitors when the site allows them (``ACCESS_ANONYMOUS``); what is listed is what the
access rules let this person read from where they are (storage.access).
"""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import Http404
from django.urls import path
from django.utils.translation import gettext as _
from django.views.generic import TemplateView

from storage import access
from storage.forms import CaptureSearchForm
from storage.replay import replay_url
from storage.selectors_reading_room import collection_records, entry_points, readable_collections
from storage.views.pages import ReadingMixin, search_link

ENTRY_POINTS_PER_PAGE = 100


class ReadingRoomView(ReadingMixin, TemplateView):
    """Search by URL, and the collections this person may read."""

    template_name = "storage/reading_room.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        viewer = access.viewer_of_request(self.request)
        context.update(
            {
                "form": CaptureSearchForm(),
                "viewer": viewer,
                "collections": readable_collections(viewer),
                "rooms_exist": bool(access.reading_room_networks()),
            }
        )
        return context


class ReadingRoomCollectionView(ReadingMixin, TemplateView):
    """A collection's entry points: its records' URLs with captures this person may read."""

    template_name = "storage/reading_room_collection.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        viewer = access.viewer_of_request(self.request)
        collection = readable_collections(viewer).filter(pk=kwargs["pk"]).first()
        if collection is None:
            raise Http404(_("No collection of this number is open to you."))
        page = Paginator(collection_records(collection), ENTRY_POINTS_PER_PAGE).get_page(
            self.request.GET.get("page")
        )
        points = entry_points(collection, viewer, list(page.object_list))
        for point in points:
            point["search"] = search_link(point["url"])
            point["replay"] = replay_url(point["url"], point["last"].strftime("%Y%m%d%H%M%S"))
        context.update(
            {
                "collection": collection,
                "viewer": viewer,
                "points": points,
                "page_obj": page,
                "paginator": page.paginator,
                "is_paginated": page.has_other_pages(),
            }
        )
        return context


urlpatterns = [
    path("reading-room/", ReadingRoomView.as_view(), name="reading_room"),
    path(
        "reading-room/collections/<int:pk>/",
        ReadingRoomCollectionView.as_view(),
        name="reading_room_collection",
    ),
]
