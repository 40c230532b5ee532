"""Collection pages: list, detail with themes and members; creation and editing by curators."""

from django.contrib import messages
from django.shortcuts import get_object_or_404
from django.utils.functional import cached_property
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from selection import services
from selection.filtersets import CollectionFilterSet
from selection.forms import CollectionForm, ThemeForm
from selection.models import Collection, Record, Theme
from selection.tables import CollectionTable
from webarchive.permissions import ADD, CHANGE, VALIDATE, Area, permitted
from webarchive.views import ObjectDetailView, ObjectListView, PermittedActionsMixin, ServiceFormView


def collection_offers(user, collection: Collection) -> dict[str, bool]:
    """What a collection's page offers besides changing it: adding a theme, and proposing a URL, which
    also needs the user to write in this collection (a member, or a curator)."""
    return {
        "add_theme": permitted(user, Theme, [ADD])[ADD],
        "propose": permitted(user, Record, [ADD])[ADD]
        and Collection.objects.writable_by(user).filter(pk=collection.pk).exists(),
        # Accepting suggested frequencies (their page comes from storage: the measured change rates).
        "validate": permitted(user, Record, [VALIDATE])[VALIDATE],
    }


class CollectionListView(PermittedActionsMixin, ObjectListView):
    area = Area.SELECTION
    queryset = Collection.objects.all()
    filterset_class = CollectionFilterSet
    table_class = CollectionTable
    template_name = "selection/collection_list.html"
    actions = (ADD,)


class CollectionDetailView(PermittedActionsMixin, ObjectDetailView):
    area = Area.SELECTION
    actions = (CHANGE,)
    queryset = Collection.objects.prefetch_related("members", "themes")
    fields = [
        "name",
        "kind",
        "description",
        "is_active",
        "default_budget",
        "default_frequency",
        "default_depth",
        "created_at",
    ]
    template_name = "selection/collection_detail.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context.update(
            {
                "record_count": self.object.records.count(),
                "offers": collection_offers(self.request.user, self.object),
                "theme_form": ThemeForm(),
            }
        )
        return context


class CollectionCreateView(ServiceFormView):
    area = Area.SELECTION
    model_permission = (ADD, Collection)
    permission_denied_message = gettext_lazy("Only curators may create collections.")
    form_class = CollectionForm
    title = gettext_lazy("New collection")

    def perform(self, form):
        return services.collection_create(user=self.request.user, **form.cleaned_data)


class CollectionInURLMixin:
    @cached_property
    def collection(self) -> Collection:
        return get_object_or_404(Collection, pk=self.kwargs["pk"])


class CollectionEditView(CollectionInURLMixin, ServiceFormView):
    area = Area.SELECTION
    model_permission = (CHANGE, Collection)
    permission_denied_message = gettext_lazy("Only curators may edit collections.")
    form_class = CollectionForm
    title = gettext_lazy("Edit the collection")

    def get_form_kwargs(self):
        kwargs = super().get_form_kwargs()
        kwargs["instance"] = Collection.objects.get(pk=self.collection.pk)  # validated on a copy
        return kwargs

    def perform(self, form):
        return services.collection_update(
            collection=self.collection,
            user=self.request.user,
            expected_version=form.seen,
            **form.cleaned_data,
        )


class ThemeCreateView(CollectionInURLMixin, ServiceFormView):
    area = Area.SELECTION
    model_permission = (ADD, Theme)
    permission_denied_message = gettext_lazy("Only curators may add themes.")
    form_class = ThemeForm
    title = gettext_lazy("New theme")

    def perform(self, form):
        theme = services.theme_create(collection=self.collection, name=form.cleaned_data["name"])
        messages.success(self.request, _("Theme “%(name)s” added.") % {"name": theme.name})
        return self.collection
