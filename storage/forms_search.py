"""The full-text search form: one validation for the Access page and ``/api/search/``."""

from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from storage import search
from storage.selectors_search import MAX_PER_PAGE, PER_PAGE, SearchRequest
from webarchive.forms import BootstrapMixin

SORT_CHOICES = [
    ("relevance", _("Relevance")),
    ("newest", _("Newest first")),
    ("oldest", _("Oldest first")),
]
PARAMETERS = ("q", "domain", "year", "mime", "collection", "language", "sort", "page", "page_size")
MAX_PAGE = 500  # CANDIDATES / PER_PAGE: no hit lies beyond


class TextSearchForm(BootstrapMixin, forms.Form):
    """Words to find, with filters, an order and a page."""

    q = forms.CharField(
        label=_("Words"),
        max_length=search.MAX_QUERY,
        help_text=_(
            "Every word must appear (accents or not). "
            "“a phrase” in quotes, OR between two words for either, -word to leave a word out."
        ),
    )
    domain = forms.CharField(label=_("Domain"), max_length=255, required=False)
    year = forms.IntegerField(label=_("Year"), min_value=1990, max_value=2999, required=False)
    mime = forms.CharField(label=_("MIME type"), max_length=255, required=False)
    collection = forms.IntegerField(label=_("Collection"), min_value=1, required=False)
    language = forms.RegexField(
        label=_("Language"),
        regex=r"^[a-z]{2,3}$",
        required=False,
        error_messages={"invalid": _("A language is a two- or three-letter code, such as fr or en.")},
    )
    sort = forms.ChoiceField(label=_("Order"), choices=SORT_CHOICES, required=False)
    page = forms.IntegerField(
        min_value=1,
        max_value=MAX_PAGE,
        required=False,
        error_messages={"invalid": _("A page is a whole number from 1.")},
    )
    page_size = forms.IntegerField(min_value=1, max_value=MAX_PER_PAGE, required=False)

    def clean_q(self):
        text = self.cleaned_data["q"]
        try:
            return search.parse_query(text)
        except search.QueryError as error:
            raise ValidationError(str(error), code="query") from error

    def clean_domain(self):
        return self.cleaned_data["domain"].strip().lower()

    def clean_mime(self):
        return self.cleaned_data["mime"].strip().lower()

    def search_request(self) -> SearchRequest:
        data = self.cleaned_data
        return SearchRequest(
            query=data["q"],
            domain=data["domain"],
            year=data["year"],
            mime=data["mime"],
            collection=data["collection"],
            language=data["language"],
            sort=data["sort"] or "relevance",
            page=data["page"] or 1,
            per_page=data["page_size"] or PER_PAGE,
        )
