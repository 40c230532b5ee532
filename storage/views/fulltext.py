"""The full-text search page of the Access area: words, filters and facets, one hit per URL.

Readers see only hits, snippets and counts of captures they may read (storage.selectors_search);
anonymous visitors too when the site allows anonymous reading.
"""

from __future__ import annotations

from django.urls import path
from django.views.generic import TemplateView

from storage import access
from storage.forms_search import SORT_CHOICES, TextSearchForm
from storage.selectors_search import FACETS, archive_search
from storage.views.pages import ReadingMixin, search_link


class TextSearchView(ReadingMixin, TemplateView):
    """Words to find in the text of archived pages, PDF and text documents."""

    template_name = "storage/text_search.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        form = TextSearchForm(self.request.GET if "q" in self.request.GET else None)
        context.update({"form": form, "sorts": SORT_CHOICES})
        if form.is_bound and form.is_valid():
            request = form.search_request()
            results = archive_search(request, access.viewer_of_request(self.request))
            for hit in results.hits:
                hit.versions_link = search_link(hit.url)
            context.update(
                {
                    "results": results,
                    "facets": [(name, form.fields[name].label, results.facets[name]) for name in FACETS],
                    "filters": request.filters(),
                    "first": (request.page - 1) * request.per_page + 1,
                }
            )
        return context


urlpatterns = [path("search/text/", TextSearchView.as_view(), name="text_search")]
