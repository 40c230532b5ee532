"""Planning pages: domains, their seed lists and configurations.

Every form hands its input to one service (``harvest.services``), which
decides and whose refusals are shown at the field they concern. Domains are
never deleted: no page here offers it.
"""

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import QueryDict
from django.shortcuts import get_object_or_404, redirect
from django.urls import path, reverse
from django.utils.functional import cached_property
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext
from django.views.generic import View

from harvest import hooks
from harvest.filtersets import ConfigurationFilterSet, DomainFilterSet
from harvest.forms.domains import (
    ConfigurationForm,
    ConfigurationLimitsForm,
    DomainAliasForm,
    DomainCreateForm,
    DomainEditForm,
    DomainListForm,
    SeedListForm,
)
from harvest.models import Domain, DomainConfiguration, HarvestInfo, SeedList
from harvest.services import domains as domain_services
from harvest.tables import DomainTable
from harvest.views.base import (
    MAX_BULK_LIMITS,
    PLANNING,
    SHOWN_NAMES,
    SHOWN_REFUSALS,
    PlanningFormView,
    local_date,
    messages_from,
)
from webarchive.forms import add_bootstrap_classes
from webarchive.permissions import ADD, CHANGE, DELETE, permitted, restrict
from webarchive.views import (
    AreaRequiredMixin,
    ObjectDetailView,
    ObjectListView,
    PermittedActionsMixin,
)

SHOWN_HARVESTS = 100  # rows of a domain's harvest history; the count says how many in all
COUNT_LIMIT = 10_000  # domains counted by a search at most (the pages go as far)

# Domains ---------------------------------------------------------------------------------------


class DomainPaginator(Paginator):
    """Pages of domains for searches over millions of them: counted up to COUNT_LIMIT + 1 only (the
    page says "more than …"). The first COUNT_LIMIT + 1 matches are read once, in no order (so that
    PostgreSQL finds them through the search's index, or the first rows of the table when most
    names match, instead of walking the whole name index in order hoping to meet them early), with
    their names: when there are no more, they are the count and, sorted here (by code point, as the
    C collation does), the pages (one read of
    a trigram index at 3,000,000 domains costs tens of milliseconds; a count then a page read it
    twice). Beyond that, the pages walk the name's index in order."""

    @cached_property
    def _matches(self) -> list[tuple[str, int]]:
        rows = self.object_list.order_by().values_list("name", "pk")[: COUNT_LIMIT + 1]
        return sorted(rows)

    @cached_property
    def count(self) -> int:
        return len(self._matches)

    def page(self, number):
        number = self.validate_number(number)
        if self.count > COUNT_LIMIT:
            return super().page(number)
        start = (number - 1) * self.per_page
        ids = [pk for _name, pk in self._matches[start : start + self.per_page]]
        # By their ids alone (the search's condition again could bring its index back in).
        rows = {row.pk: row for row in Domain.objects.select_related("alias_of").filter(pk__in=ids)}
        return self._get_page([rows[pk] for pk in ids if pk in rows], number, self)


class DomainListView(PermittedActionsMixin, ObjectListView):
    area = PLANNING
    queryset = Domain.objects.select_related("alias_of")
    filterset_class = DomainFilterSet
    table_class = DomainTable
    paginator_class = DomainPaginator
    actions = (ADD,)
    template_name = "harvest/domain_list.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["count_limit"] = COUNT_LIMIT
        context["count_bounded"] = context["result_count"] > COUNT_LIMIT
        return context


class DomainDetailView(PermittedActionsMixin, ObjectDetailView):
    area = PLANNING
    queryset = Domain.objects.select_related("alias_of", "default_configuration")
    fields = ["comments", "crawler_traps", "is_active", "created_at"]
    actions = (CHANGE,)
    template_name = "harvest/domain_detail.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        domain = self.object
        user = self.request.user
        aliases = domain.aliases.order_by("name")
        context.update(
            {
                "configurations": domain.configurations.select_related("template", "source_collection")
                .prefetch_related("seed_lists", "harvest_definitions")
                .order_by("name"),
                "seed_lists": domain.seed_lists.prefetch_related("configurations").order_by("name"),
                "aliases": aliases[:100],
                "alias_count": aliases.count(),
                "alias_form": DomainAliasForm(
                    initial={"alias_of": domain.alias_of.name if domain.alias_of else ""}
                ),
                # The page's other objects: its seed lists and configurations.
                "permitted_for": {
                    "seed_list": permitted(user, SeedList, (ADD, CHANGE, DELETE)),
                    "configuration": permitted(user, DomainConfiguration, (ADD,)),
                },
                **harvest_history(domain, user),
                "panels": hooks.domain_panels.collect(domain=domain, user=user),
            }
        )
        return context


def harvest_history(domain: Domain, user) -> dict:
    """What each job harvested of the domain, the most recent first (the first SHOWN_HARVESTS)."""
    infos = restrict(HarvestInfo.objects.filter(domain=domain), user).order_by("-created_at", "-pk")
    return {
        "harvests": infos.select_related("job", "job__harvest_definition", "configuration").defer(
            "job__template_settings", "job__crawler_traps"
        )[:SHOWN_HARVESTS],
        "harvest_count": infos.count(),
    }


class DomainCreateView(PlanningFormView):
    model_permission = (ADD, Domain)
    form_class = DomainCreateForm
    title = gettext_lazy("New domain")
    submit_label = gettext_lazy("Create the domain")
    cancel = "harvest:domain_list"

    def perform(self, form):
        domain = domain_services.domain_create(user=self.request.user, **form.cleaned_data)
        messages.success(
            self.request,
            _("The domain %(name)s was created with its default seed list and configuration.")
            % {"name": domain},
        )
        return domain


class DomainBulkCreateView(PlanningFormView):
    """Paste or upload a list: first the check (new, known, refused lines), then the creation."""

    model_permission = (ADD, Domain)
    form_class = DomainListForm
    template_name = "harvest/domain_bulk_create.html"
    title = gettext_lazy("Add a list of domains")
    cancel = "harvest:domain_list"

    checked_text = None  # the list that was read, shown as its check under the form

    def form_valid(self, form):
        self.checked_text = form.cleaned_data["text"]
        if "create" not in self.request.POST:
            return self.render_to_response(self.get_context_data(form=form))
        return super().form_valid(form)

    def perform(self, form):
        try:
            report = domain_services.domains_create_from_list(
                text=form.cleaned_data["text"],
                user=self.request.user,
                skip_invalid=form.cleaned_data["skip_invalid"],
            )
        except ValidationError as error:
            if hasattr(error, "error_dict"):
                raise
            # One message per refused line: they are listed with their reasons under the form.
            raise ValidationError(
                ngettext(
                    "%(n)d line is refused, so nothing was created: correct it, or tick "
                    "“create the valid ones and skip the refused lines”.",
                    "%(n)d lines are refused, so nothing was created: correct them, or tick "
                    "“create the valid ones and skip the refused lines”.",
                    len(error.messages),
                )
                % {"n": len(error.messages)}
            ) from error
        summary = [
            ngettext("%(n)d domain created", "%(n)d domains created", report.created) % {"n": report.created},
            ngettext("%(n)d already known", "%(n)d already known", len(report.existing))
            % {"n": len(report.existing)},
        ]
        if report.errors:
            summary.append(
                ngettext("%(n)d refused line skipped", "%(n)d refused lines skipped", len(report.errors))
                % {"n": len(report.errors)}
            )
        messages.success(self.request, "; ".join(summary) + ".")
        return reverse("harvest:domain_list")

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        text = self.checked_text
        if text:
            report = domain_services.domain_list_check(text)
            context.update(
                {
                    "report": report,
                    "text": text,
                    "new_shown": report.new[:SHOWN_NAMES],
                    "existing_shown": report.existing[:SHOWN_NAMES],
                    "errors_shown": report.errors[:SHOWN_REFUSALS],
                }
            )
        return context


class DomainEditView(PlanningFormView):
    model = Domain
    model_permission = (CHANGE, Domain)
    form_class = DomainEditForm
    title = gettext_lazy("Edit the domain %(name)s")

    def perform(self, form):
        domain = domain_services.domain_update(
            domain=self.object, user=self.request.user, expected_version=form.seen, **form.cleaned_data
        )
        messages.success(self.request, _("The domain %(name)s was saved.") % {"name": domain})
        return domain


class DomainAliasView(PlanningFormView):
    """Make the domain an alias of another, renew it (the same target again), or clear it."""

    model = Domain
    related = ("alias_of",)
    model_permission = (CHANGE, Domain)
    form_class = DomainAliasForm
    title = gettext_lazy("Alias of %(name)s")
    submit_label = gettext_lazy("Save the alias")

    def get_initial(self):
        return {"alias_of": self.object.alias_of.name if self.object.alias_of else ""}

    def perform(self, form):
        domain = domain_services.domain_set_alias(
            domain=self.object, alias_of=form.cleaned_data["alias_of"], user=self.request.user
        )
        if domain.alias_of is None:
            message = _("%(domain)s is not an alias.") % {"domain": domain}
        else:
            message = _("%(domain)s is an alias of %(target)s until %(date)s.") % {
                "domain": domain,
                "target": domain.alias_of,
                "date": local_date(domain.alias_expires_at),
            }
        messages.success(self.request, message)
        return f"{domain.get_absolute_url()}#alias"


class DomainAliasRenewView(AreaRequiredMixin, View):
    area = PLANNING
    model_permission = (CHANGE, Domain)

    def post(self, request, pk):
        domain = get_object_or_404(Domain, pk=pk)
        try:
            domain = domain_services.domain_alias_renew(domain=domain, user=request.user)
        except ValidationError as error:
            messages_from(request, error)
        else:
            messages.success(
                request,
                _("The alias of %(domain)s to %(target)s is renewed until %(date)s.")
                % {"domain": domain, "target": domain.alias_of, "date": local_date(domain.alias_expires_at)},
            )
        return redirect(f"{domain.get_absolute_url()}#alias")


# Seed lists ------------------------------------------------------------------------------------


class SeedListCreateView(PlanningFormView):
    model_permission = (ADD, SeedList)
    form_class = SeedListForm
    title = gettext_lazy("New seed list of %(domain)s")
    submit_label = gettext_lazy("Create the seed list")

    def get_form_kwargs(self):
        return {**super().get_form_kwargs(), "instance": SeedList(domain=self.domain)}

    def perform(self, form):
        seed_list = domain_services.seed_list_save(
            user=self.request.user, domain=self.domain, **form.cleaned_data
        )
        messages.success(self.request, _("The seed list %(name)s was created.") % {"name": seed_list.name})
        return f"{self.domain.get_absolute_url()}#seed-lists"


class SeedListEditView(PlanningFormView):
    model = SeedList
    related = ("domain",)
    model_permission = (CHANGE, SeedList)
    form_class = SeedListForm
    title = gettext_lazy("Edit the seed list %(name)s of %(domain)s")

    def perform(self, form):
        seed_list = domain_services.seed_list_save(
            user=self.request.user, seed_list=self.object, expected_version=form.seen, **form.cleaned_data
        )
        messages.success(self.request, _("The seed list %(name)s was saved.") % {"name": seed_list.name})
        return f"{self.domain.get_absolute_url()}#seed-lists"


class SeedListDeleteView(AreaRequiredMixin, View):
    area = PLANNING
    model_permission = (DELETE, SeedList)

    def post(self, request, pk):
        seed_list = get_object_or_404(SeedList.objects.select_related("domain"), pk=pk)
        try:
            domain_services.seed_list_delete(seed_list=seed_list, user=request.user)
        except ValidationError as error:
            messages_from(request, error)
        else:
            messages.success(request, _("The seed list %(name)s was removed.") % {"name": seed_list.name})
        return redirect(f"{seed_list.domain.get_absolute_url()}#seed-lists")


# Configurations --------------------------------------------------------------------------------


class ConfigurationDetailView(PermittedActionsMixin, ObjectDetailView):
    area = PLANNING
    queryset = DomainConfiguration.objects.select_related("domain", "template", "source_collection")
    actions = (CHANGE, DELETE)
    template_name = "harvest/configuration_detail.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        configuration = self.object
        context.update(
            {
                "is_default": configuration.domain.default_configuration_id == configuration.pk,
                "seed_lists": configuration.seed_lists.order_by("name"),
                "definitions": configuration.harvest_definitions.order_by("name"),
                "job_count": configuration.job_entries.count(),
            }
        )
        return context


def configuration_save(view, form, **where):
    data = dict(form.cleaned_data)
    seed_lists = data.pop("seed_lists")
    return domain_services.configuration_save(user=view.request.user, seed_lists=seed_lists, **where, **data)


class ConfigurationCreateView(PlanningFormView):
    model_permission = (ADD, DomainConfiguration)
    form_class = ConfigurationForm
    title = gettext_lazy("New configuration of %(domain)s")
    submit_label = gettext_lazy("Create the configuration")

    def get_form_kwargs(self):
        # Starts from the default configuration's template and seed lists.
        default = self.domain.default_configuration
        instance = DomainConfiguration(domain=self.domain, template_id=default and default.template_id)
        return {**super().get_form_kwargs(), "instance": instance}

    def get_initial(self):
        default = self.domain.default_configuration
        return {"seed_lists": list(default.seed_lists.all()) if default else []}

    def perform(self, form):
        configuration = configuration_save(self, form, domain=self.domain)
        messages.success(
            self.request, _("The configuration %(name)s was created.") % {"name": configuration.name}
        )
        return configuration


class ConfigurationEditView(PlanningFormView):
    model = DomainConfiguration
    related = ("domain", "template")
    model_permission = (CHANGE, DomainConfiguration)
    form_class = ConfigurationForm
    title = gettext_lazy("Edit the configuration %(name)s of %(domain)s")

    def perform(self, form):
        configuration = configuration_save(self, form, configuration=self.object, expected_version=form.seen)
        messages.success(
            self.request, _("The configuration %(name)s was saved.") % {"name": configuration.name}
        )
        return configuration


class ConfigurationDeleteView(AreaRequiredMixin, View):
    area = PLANNING
    model_permission = (DELETE, DomainConfiguration)

    def post(self, request, pk):
        configuration = get_object_or_404(DomainConfiguration.objects.select_related("domain"), pk=pk)
        try:
            domain_services.configuration_delete(configuration=configuration, user=request.user)
        except ValidationError as error:
            messages_from(request, error)
            return redirect(configuration)
        messages.success(request, _("The configuration %(name)s was removed.") % {"name": configuration.name})
        return redirect(f"{configuration.domain.get_absolute_url()}#configurations")


class ConfigurationBulkLimitsView(PlanningFormView):
    """Change the budget of every configuration the filters select (all of a definition, of a template…).

    The form carries the filters and the number of configurations the user saw;
    if the selection has changed since, nothing is written and the new count is shown.
    """

    model_permission = (CHANGE, DomainConfiguration)
    form_class = ConfigurationLimitsForm
    template_name = "harvest/configuration_bulk_limits.html"
    title = gettext_lazy("Change the budget of many configurations")
    submit_label = gettext_lazy("Change the budget")
    cancel = "harvest:configuration_bulk_limits"

    @cached_property
    def filterset(self) -> ConfigurationFilterSet:
        if self.request.method == "POST":
            query = QueryDict(self.request.POST.get("query", ""))
        else:
            query = self.request.GET.copy()
            query.pop("page", None)
        queryset = DomainConfiguration.objects.select_related("domain", "template").order_by(
            "domain__name", "name"
        )
        filterset = ConfigurationFilterSet(query, queryset=queryset, request=self.request)
        add_bootstrap_classes(filterset.form, small=True)
        return filterset

    @cached_property
    def selection(self):
        """The selected configurations, or None when a filter is not valid (never all of them instead)."""
        return self.filterset.qs if self.filterset.is_valid() else None

    def perform(self, form):
        if self.selection is None:
            raise ValidationError(_("Correct the filters first."))
        count = self.selection.count()
        if count != form.cleaned_data["expected_count"]:
            raise ValidationError(
                _(
                    "The selection changed: %(now)d configurations match now, not %(then)d. "
                    "Nothing was changed; check and confirm again."
                )
                % {"now": count, "then": form.cleaned_data["expected_count"]}
            )
        if count == 0:
            raise ValidationError(_("No configuration matches these filters."))
        if count > MAX_BULK_LIMITS:
            raise ValidationError(
                _("Narrow the selection to %(max)d configurations or fewer.") % {"max": MAX_BULK_LIMITS}
            )
        changed = domain_services.configurations_set_limits(
            configurations=self.selection.select_related(None).only("pk"),
            user=self.request.user,
            max_objects=form.cleaned_data["max_objects"],
            max_bytes=form.cleaned_data["max_bytes"],
        )
        messages.success(
            self.request,
            ngettext(
                "The budget of %(n)d configuration was changed.",
                "The budget of %(n)d configurations was changed.",
                changed,
            )
            % {"n": changed},
        )
        return f"{self.request.path}?{form.cleaned_data['query']}"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        page = None
        if self.selection is not None:
            page = Paginator(self.selection, 50).get_page(self.request.GET.get("page"))
        context.update(
            {
                "filterset": self.filterset,
                "query": self.filterset.data.urlencode(),
                "page_obj": page,
                "paginator": page.paginator if page else None,
                "is_paginated": bool(page and page.has_other_pages()),
                "result_count": page.paginator.count if page else 0,
                "max_bulk": MAX_BULK_LIMITS,
            }
        )
        return context


urlpatterns = [
    path("domains/", DomainListView.as_view(), name="domain_list"),
    path("domains/new/", DomainCreateView.as_view(), name="domain_create"),
    path("domains/new-list/", DomainBulkCreateView.as_view(), name="domain_bulk_create"),
    path("domains/<int:pk>/", DomainDetailView.as_view(), name="domain_detail"),
    path("domains/<int:pk>/edit/", DomainEditView.as_view(), name="domain_edit"),
    path("domains/<int:pk>/alias/", DomainAliasView.as_view(), name="domain_alias"),
    path("domains/<int:pk>/alias/renew/", DomainAliasRenewView.as_view(), name="domain_alias_renew"),
    path("domains/<int:domain_pk>/seed-lists/new/", SeedListCreateView.as_view(), name="seedlist_create"),
    path("seed-lists/<int:pk>/edit/", SeedListEditView.as_view(), name="seedlist_edit"),
    path("seed-lists/<int:pk>/delete/", SeedListDeleteView.as_view(), name="seedlist_delete"),
    path(
        "domains/<int:domain_pk>/configurations/new/",
        ConfigurationCreateView.as_view(),
        name="configuration_create",
    ),
    path("configurations/budget/", ConfigurationBulkLimitsView.as_view(), name="configuration_bulk_limits"),
    path("configurations/<int:pk>/", ConfigurationDetailView.as_view(), name="configuration_detail"),
    path("configurations/<int:pk>/edit/", ConfigurationEditView.as_view(), name="configuration_edit"),
    path("configurations/<int:pk>/delete/", ConfigurationDeleteView.as_view(), name="configuration_delete"),
]
