"""``/api/search/``: full-text search over the captures the caller may read (storage.selectors_search).

The same query language, filters and access rules as the Access page; the answer is a page of hits
(one per URL) with the facets. A snippet is given twice: as plain text, and as HTML in which the
crawled text is escaped and only the matched words are marked (``<mark>``).
"""

from django.urls import reverse
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from storage import access
from storage.forms_search import PARAMETERS, TextSearchForm
from storage.models import Capture
from storage.selectors_search import FACETS, archive_search
from webarchive.api.filters import refuse_unknown_parameters
from webarchive.permissions import Area


class FacetValueSerializer(serializers.Serializer):
    value = serializers.CharField()
    label = serializers.CharField()
    count = serializers.IntegerField()
    selected = serializers.BooleanField()


class HitSerializer(serializers.Serializer):
    url = serializers.CharField()
    timestamp = serializers.CharField(help_text=_("The 14-digit UTC timestamp of the capture a hit opens."))
    captured_at = serializers.DateTimeField()
    title = serializers.CharField()
    snippet = serializers.CharField(help_text=_("The text around the matched words."))
    snippet_html = serializers.CharField(
        help_text=_("The same, as HTML: the text escaped, the matched words in <mark>.")
    )
    mime = serializers.CharField()
    language = serializers.CharField()
    domain = serializers.CharField()
    collection = serializers.CharField(help_text=_("The first collection the capture belongs to."))
    collections = serializers.ListField(child=serializers.CharField())
    captures = serializers.IntegerField(help_text=_("The URL's captures the caller may read."))
    anchors = serializers.ListField(
        child=serializers.CharField(), help_text=_("Texts of links to this URL that hold the words.")
    )
    capture = serializers.CharField(help_text=_("The capture's page in the Access area."))
    replay = serializers.CharField()


class SearchResultsSerializer(serializers.Serializer):
    count = serializers.IntegerField(help_text=_("URLs found (at least, when count_is_exact is false)."))
    count_is_exact = serializers.BooleanField()
    page = serializers.IntegerField()
    pages = serializers.IntegerField()
    results = HitSerializer(many=True)
    facets = serializers.DictField(child=FacetValueSerializer(many=True))


class SearchView(APIView):
    """Full-text search of the archive: one hit per URL, the most relevant (or newest, oldest) first."""

    # Readers and staff, logged in (as for /cdx, a machine endpoint answers no anonymous caller; the
    # page answers them when the site allows anonymous reading).
    area = Area.ACCESS
    queryset = Capture.objects.none()  # the permission checked: viewing captures

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "q", str, required=True, description=str(TextSearchForm.base_fields["q"].help_text)
            ),
            OpenApiParameter("domain", str, description="A registered domain, e.g. example.fr."),
            OpenApiParameter("year", int, description="Captured in this year (the site's time zone)."),
            OpenApiParameter("mime", str, description="A MIME type, e.g. text/html or application/pdf."),
            OpenApiParameter("collection", int, description="A collection's id."),
            OpenApiParameter("language", str, description="A language code: fr, en…"),
            OpenApiParameter("sort", str, enum=["relevance", "newest", "oldest"]),
            OpenApiParameter("page", int),
            OpenApiParameter("page_size", int, description="Hits per page, 1 to 100 (20)."),
        ],
        responses=SearchResultsSerializer,
    )
    def get(self, request):
        refuse_unknown_parameters(request, PARAMETERS)
        form = TextSearchForm(request.query_params)
        if not form.is_valid():
            raise ValidationError({name: list(errors) for name, errors in form.errors.items()})
        search_request = form.search_request()
        results = archive_search(search_request, access.viewer_of_request(request))
        hits = [
            {
                "url": hit.url,
                "timestamp": hit.capture.timestamp14 if hit.capture else "",
                "captured_at": hit.capture.timestamp if hit.capture else hit.last_capture,
                "title": hit.title,
                "snippet": hit.snippet_text,
                "snippet_html": str(hit.snippet_html),
                "mime": hit.mime,
                "language": hit.language,
                "domain": hit.domain,
                "collection": hit.collections[0] if hit.collections else "",
                "collections": hit.collections,
                "captures": hit.capture_count,
                "anchors": hit.anchors,
                "capture": request.build_absolute_uri(
                    reverse("storage:capture_detail", args=[hit.capture.pk])
                )
                if hit.capture
                else "",
                "replay": hit.replay,
            }
            for hit in results.hits
        ]
        data = {
            "count": results.total,
            "count_is_exact": not results.capped,
            "page": search_request.page,
            "pages": results.pages,
            "results": hits,
            "facets": {
                name: [
                    {
                        "value": str(item.value),
                        "label": item.label,
                        "count": item.count,
                        "selected": item.selected,
                    }
                    for item in results.facets[name]
                ]
                for name in FACETS
            },
        }
        return Response(SearchResultsSerializer(data).data)
