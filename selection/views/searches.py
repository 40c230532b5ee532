"""Saved searches: a user keeps record-list filters under a name."""

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect
from django.utils.translation import gettext as _
from django.views.generic import View

from selection import services
from selection.forms import SavedSearchForm
from selection.models import SavedSearch
from webarchive.permissions import Area
from webarchive.views import AreaRequiredMixin


class SavedSearchCreateView(AreaRequiredMixin, View):
    area = Area.SELECTION

    def post(self, request):
        form = SavedSearchForm(request.POST)
        query = request.POST.get("query", "")
        back = (
            f"{redirect('selection:record_list').url}?{query}"
            if query
            else redirect("selection:record_list").url
        )
        if not form.is_valid():
            messages.error(request, _("Give the search a name (up to 100 characters)."))
            return redirect(back)
        try:
            search = services.saved_search_create(
                user=request.user, name=form.cleaned_data["name"], query=form.cleaned_data["query"]
            )
        except ValidationError as error:
            for message in error.messages:
                messages.error(request, message)
            return redirect(back)
        messages.success(request, _("Search “%(name)s” saved.") % {"name": search.name})
        return redirect(search.get_absolute_url())


class SavedSearchDeleteView(AreaRequiredMixin, View):
    area = Area.SELECTION

    def post(self, request, pk):
        search = get_object_or_404(SavedSearch, pk=pk, user=request.user)
        services.saved_search_delete(user=request.user, search=search)
        messages.success(request, _("Search “%(name)s” deleted.") % {"name": search.name})
        return redirect("selection:record_list")
