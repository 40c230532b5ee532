"""The API's pagination: DRF's page numbers, with a page that is not one refused (400) instead of
read as the first page (a script asking for ``?page=`` or ``?page=x`` must not take page 1 for it)."""

from django.utils.translation import gettext as _
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import PageNumberPagination


class PageNumbers(PageNumberPagination):
    def get_page_number(self, request, paginator):
        given = request.query_params.get(self.page_query_param)
        if given is None:
            return 1
        if given in self.last_page_strings:
            return given
        if not (given.isascii() and given.isdigit() and int(given) >= 1):
            raise ValidationError({self.page_query_param: [_("A page is a whole number from 1.")]})
        return given
