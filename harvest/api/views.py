"""Viewsets of the planning API: each write calls one service of ``harvest.services``.

Domains, templates, schedules, channels, harvest definitions and global trap
lists are never deleted (DELETE is a 405); seed lists, configurations and the
mappings may be, when the service finds that nothing depends on them.

A change (PUT, PATCH) of any of them but the mappings is made over the
``version`` the client read: the service refuses it if someone saved the
object since, which the API answers with 409 and what they changed.
"""

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import Count, Prefetch
from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.settings import api_settings

from harvest.api.serializers import (
    BudgetMappingSerializer,
    ChannelSerializer,
    CollectionMappingSerializer,
    ConfigurationLimitsResultSerializer,
    ConfigurationLimitsSerializer,
    ConfigurationSerializer,
    DefinitionConfigurationsSerializer,
    DomainAliasSerializer,
    DomainBulkCreateSerializer,
    DomainListReportSerializer,
    DomainSerializer,
    HarvestDefinitionSerializer,
    ScheduleSerializer,
    SeedListSerializer,
    TemplateSerializer,
    TransferReportSerializer,
    TransferRequestSerializer,
    TrapListSerializer,
)
from harvest.filtersets import (
    ChannelFilterSet,
    ConfigurationFilterSet,
    DomainFilterSet,
    HarvestDefinitionFilterSet,
    ScheduleFilterSet,
    SeedListFilterSet,
    TemplateFilterSet,
    TransferReportFilterSet,
    TrapListFilterSet,
)
from harvest.models import (
    BudgetMapping,
    CollectionMapping,
    Domain,
    DomainConfiguration,
    GlobalCrawlerTrapList,
    HarvestChannel,
    HarvestDefinition,
    HarvestTemplate,
    Schedule,
    SeedList,
    TransferReport,
)
from harvest.services import domains, planning, transfer
from harvest.validators import domain_name_normalise
from webarchive.api.viewsets import NoDeleteViewSet, ReadOnlyViewSet, RestrictedQuerysetMixin
from webarchive.permissions import CHANGE, VIEW, Area, restrict


class PlanningViewSetMixin:
    area = Area.PLANNING
    action_permissions: dict = {}


class CrudViewSet(RestrictedQuerysetMixin, viewsets.ModelViewSet):
    """List, retrieve, create, update and delete: for configuration that is not archival data.

    Subclasses implement ``perform_create``, ``perform_update`` and
    ``perform_destroy`` by calling one service.
    """


def _names(model):
    """Id and name of related objects, for a nested read."""
    return model.objects.only("pk", "name", "domain_id").order_by("name")


def _fields(serializer) -> dict:
    return dict(serializer.validated_data)


def _unknown_ids(wanted: list[int], found) -> str | None:
    missing = sorted(set(wanted) - set(found))
    if not missing:
        return None
    return _("No configuration has the id %(ids)s.") % {"ids": ", ".join(map(str, missing))}


# Domains ---------------------------------------------------------------------------------------


class DomainViewSet(PlanningViewSetMixin, NoDeleteViewSet):
    """Domains: never deleted. Creating one gives it a default seed list and configuration."""

    queryset = Domain.objects.select_related("alias_of").prefetch_related(
        Prefetch("configurations", queryset=_names(DomainConfiguration)),
        Prefetch("seed_lists", queryset=_names(SeedList)),
    )
    serializer_class = DomainSerializer
    filterset_class = DomainFilterSet
    action_permissions = {"alias": (CHANGE, None), "renew_alias": (CHANGE, None)}

    def perform_create(self, serializer):
        serializer.instance = domains.domain_create(user=self.request.user, **_fields(serializer))

    def perform_update(self, serializer):
        serializer.instance = domains.domain_update(
            domain=serializer.instance,
            user=self.request.user,
            expected_version=serializer.expected_version,
            **_fields(serializer),
        )

    def _answer(self, domain):
        return Response(self.get_serializer(self.get_queryset().get(pk=domain.pk)).data)

    @extend_schema(request=DomainAliasSerializer, responses=DomainSerializer)
    @action(detail=True, methods=["post"])
    def alias(self, request, pk=None):
        """Make the domain an alias of another (setting it again renews it), or end the alias (null)."""
        domain = self.get_object()
        body = DomainAliasSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        name = body.validated_data["alias_of"]
        target = None
        if name is not None:
            try:
                lookup = domain_name_normalise(name)
            except DjangoValidationError:
                lookup = name.strip().lower()
            target = self.get_queryset().filter(name=lookup).first()
            if target is None:
                raise ValidationError(
                    {"alias_of": [_("There is no domain named “%(name)s”.") % {"name": name}]}
                )
        return self._answer(domains.domain_set_alias(domain=domain, alias_of=target, user=request.user))

    @extend_schema(request=None, responses=DomainSerializer)
    @action(detail=True, methods=["post"], url_path="renew-alias")
    def renew_alias(self, request, pk=None):
        """Keep the alias for another period."""
        return self._answer(domains.domain_alias_renew(domain=self.get_object(), user=request.user))

    @extend_schema(request=DomainBulkCreateSerializer, responses=DomainListReportSerializer)
    @action(detail=False, methods=["post"], url_path="bulk-create")
    def bulk_create(self, request):
        """Create the new domains of a list; a refused line stops all, unless ``skip_invalid``."""
        body = DomainBulkCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            report = domains.domains_create_from_list(user=request.user, **body.validated_data)
        except DjangoValidationError as error:
            if hasattr(error, "error_dict"):
                raise
            raise ValidationError({"text": error.messages}) from error
        return Response(
            {
                "created": report.created,
                "new": report.new,
                "existing": report.existing,
                "errors": [{"line": n, "text": text, "reason": why} for n, text, why in report.errors],
            },
            status=status.HTTP_201_CREATED if report.created else status.HTTP_200_OK,
        )


class SeedListViewSet(PlanningViewSetMixin, CrudViewSet):
    """Seed lists; the last of a domain, or one a configuration uses, cannot be deleted."""

    queryset = SeedList.objects.select_related("domain").prefetch_related(
        Prefetch("configurations", queryset=_names(DomainConfiguration))
    )
    serializer_class = SeedListSerializer
    filterset_class = SeedListFilterSet

    def perform_create(self, serializer):
        fields = _fields(serializer)
        serializer.instance = domains.seed_list_save(
            user=self.request.user, domain=fields.pop("domain"), **fields
        )

    def perform_update(self, serializer):
        serializer.instance = domains.seed_list_save(
            user=self.request.user,
            seed_list=serializer.instance,
            expected_version=serializer.expected_version,
            **_fields(serializer),
        )

    def perform_destroy(self, instance):
        domains.seed_list_delete(seed_list=instance, user=self.request.user)


class ConfigurationViewSet(PlanningViewSetMixin, CrudViewSet):
    """Domain configurations; a default one, or one in use, cannot be deleted."""

    queryset = DomainConfiguration.objects.select_related("domain").prefetch_related(
        Prefetch("seed_lists", queryset=SeedList.objects.only("pk").order_by("pk")),
        Prefetch("harvest_definitions", queryset=HarvestDefinition.objects.only("pk").order_by("pk")),
    )
    serializer_class = ConfigurationSerializer
    filterset_class = ConfigurationFilterSet
    action_permissions = {"bulk_limits": (CHANGE, None)}

    def perform_create(self, serializer):
        fields = _fields(serializer)
        serializer.instance = domains.configuration_save(
            user=self.request.user,
            domain=fields.pop("domain"),
            seed_lists=fields.pop("seed_lists", None),
            **fields,
        )

    def perform_update(self, serializer):
        fields = _fields(serializer)
        serializer.instance = domains.configuration_save(
            user=self.request.user,
            configuration=serializer.instance,
            seed_lists=fields.pop("seed_lists", None),
            expected_version=serializer.expected_version,
            **fields,
        )

    def perform_destroy(self, instance):
        domains.configuration_delete(configuration=instance, user=self.request.user)

    @extend_schema(request=ConfigurationLimitsSerializer, responses=ConfigurationLimitsResultSerializer)
    @action(detail=False, methods=["post"], url_path="bulk-limits", filterset_class=None)
    def bulk_limits(self, request):
        """Give many configurations a new budget at once (by ids, or the list's filters); all or none."""
        body = ConfigurationLimitsSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        queryset = restrict(DomainConfiguration.objects.all(), request.user, VIEW)
        if "ids" in data:
            found = queryset.filter(pk__in=data["ids"]).values_list("pk", flat=True)
            if error := _unknown_ids(data["ids"], found):
                raise ValidationError({"ids": [error]})
            configurations = queryset.filter(pk__in=data["ids"])
        else:
            configurations = self._filtered(queryset, data["filter"])
        changed = domains.configurations_set_limits(
            configurations=configurations.only("pk"),
            user=request.user,
            max_objects=data.get("max_objects"),
            max_bytes=data.get("max_bytes"),
        )
        return Response({"changed": changed})

    def _filtered(self, queryset, filters: dict):
        filterset = ConfigurationFilterSet(data=filters, queryset=queryset, request=self.request)
        unknown = sorted(set(filters) - set(filterset.filters))
        if unknown:
            raise ValidationError(
                {
                    "filter": [
                        _("Unknown filters: %(unknown)s. The filters are: %(known)s.")
                        % {"unknown": ", ".join(unknown), "known": ", ".join(filterset.filters)}
                    ]
                }
            )
        if not filterset.is_valid():
            raise ValidationError({"filter": filterset.errors})
        if not any(value not in (None, "", []) for value in filterset.form.cleaned_data.values()):
            raise ValidationError(
                {"filter": [_("Give at least one filter: a budget is not changed for every configuration.")]}
            )
        return filterset.qs


# Templates, schedules, channels, traps ----------------------------------------------------------


class TemplateViewSet(PlanningViewSetMixin, NoDeleteViewSet):
    """Harvest templates: a change of crawler settings is a new version. Deactivated, never deleted."""

    queryset = HarvestTemplate.objects.all()
    serializer_class = TemplateSerializer
    filterset_class = TemplateFilterSet

    def perform_create(self, serializer):
        serializer.instance = planning.template_save(user=self.request.user, **_fields(serializer))

    def perform_update(self, serializer):
        serializer.instance = planning.template_save(
            user=self.request.user,
            template=serializer.instance,
            expected_version=serializer.expected_version,
            **_fields(serializer),
        )


class ScheduleViewSet(PlanningViewSetMixin, NoDeleteViewSet):
    """Schedules, with their next run dates."""

    queryset = Schedule.objects.all()
    serializer_class = ScheduleSerializer
    filterset_class = ScheduleFilterSet

    def perform_create(self, serializer):
        serializer.instance = planning.schedule_save(user=self.request.user, **_fields(serializer))

    def perform_update(self, serializer):
        serializer.instance = planning.schedule_save(
            user=self.request.user,
            schedule=serializer.instance,
            expected_version=serializer.expected_version,
            **_fields(serializer),
        )


class ChannelViewSet(PlanningViewSetMixin, NoDeleteViewSet):
    """Harvest channels: the Celery queue jobs of a definition go to."""

    queryset = HarvestChannel.objects.all()
    serializer_class = ChannelSerializer
    filterset_class = ChannelFilterSet

    def perform_create(self, serializer):
        serializer.instance = planning.channel_save(user=self.request.user, **_fields(serializer))

    def perform_update(self, serializer):
        serializer.instance = planning.channel_save(
            user=self.request.user,
            channel=serializer.instance,
            expected_version=serializer.expected_version,
            **_fields(serializer),
        )


class TrapListViewSet(PlanningViewSetMixin, NoDeleteViewSet):
    """Global crawler trap lists: active ones apply to every job."""

    queryset = GlobalCrawlerTrapList.objects.all()
    serializer_class = TrapListSerializer
    filterset_class = TrapListFilterSet

    def perform_create(self, serializer):
        serializer.instance = planning.trap_list_save(user=self.request.user, **_fields(serializer))

    def perform_update(self, serializer):
        serializer.instance = planning.trap_list_save(
            user=self.request.user,
            trap_list=serializer.instance,
            expected_version=serializer.expected_version,
            **_fields(serializer),
        )


# Harvest definitions ---------------------------------------------------------------------------


class HarvestDefinitionViewSet(PlanningViewSetMixin, NoDeleteViewSet):
    """Harvest definitions: never deleted, only deactivated; the kind is fixed at creation."""

    queryset = (
        HarvestDefinition.objects.select_related("schedule", "channel")
        .annotate(configuration_count=Count("configurations"))
        .order_by("name", "pk")  # Meta.ordering does not apply to a GROUP BY
    )
    serializer_class = HarvestDefinitionSerializer
    filterset_class = HarvestDefinitionFilterSet
    action_permissions = {
        "activate": (CHANGE, None),
        "deactivate": (CHANGE, None),
        "run_now": (CHANGE, None),
        "change_configurations": (CHANGE, None),
    }

    def perform_create(self, serializer):
        fields = _fields(serializer)
        serializer.instance = planning.definition_save(
            user=self.request.user, kind=fields.pop("kind"), **fields
        )

    def perform_update(self, serializer):
        serializer.instance = planning.definition_save(
            user=self.request.user,
            definition=serializer.instance,
            expected_version=serializer.expected_version,
            **_fields(serializer),
        )

    def _answer(self, definition):
        return Response(self.get_serializer(self.get_queryset().get(pk=definition.pk)).data)

    @extend_schema(request=None, responses=HarvestDefinitionSerializer)
    @action(detail=True, methods=["post"])
    def activate(self, request, pk=None):
        return self._answer(
            planning.definition_set_active(definition=self.get_object(), is_active=True, user=request.user)
        )

    @extend_schema(request=None, responses=HarvestDefinitionSerializer)
    @action(detail=True, methods=["post"])
    def deactivate(self, request, pk=None):
        return self._answer(
            planning.definition_set_active(definition=self.get_object(), is_active=False, user=request.user)
        )

    @extend_schema(request=None, responses=HarvestDefinitionSerializer)
    @action(detail=True, methods=["post"], url_path="run-now")
    def run_now(self, request, pk=None):
        """Make the definition due now: the launcher makes its jobs within a minute."""
        return self._answer(planning.definition_run_now(definition=self.get_object(), user=request.user))

    @extend_schema(request=DefinitionConfigurationsSerializer, responses=HarvestDefinitionSerializer)
    @action(detail=True, methods=["post"], url_path="configurations")
    def change_configurations(self, request, pk=None):
        """Attach configurations to a selective definition, or detach them."""
        definition = self.get_object()
        body = DefinitionConfigurationsSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        visible = restrict(DomainConfiguration.objects.all(), request.user, VIEW)
        chosen, errors = {}, {}
        for field in ("add", "remove"):
            ids = body.validated_data[field]
            chosen[field] = list(visible.filter(pk__in=ids))
            if error := _unknown_ids(ids, [c.pk for c in chosen[field]]):
                errors[field] = [error]
        if errors:
            raise ValidationError(errors)
        return self._answer(
            planning.definition_configurations_change(definition=definition, user=request.user, **chosen)
        )


# Mappings and transfers ------------------------------------------------------------------------


class CollectionMappingViewSet(PlanningViewSetMixin, CrudViewSet):
    """(collection, frequency) → the selective harvest definition its records are transferred to."""

    queryset = CollectionMapping.objects.select_related("collection", "harvest_definition")
    serializer_class = CollectionMappingSerializer
    filterset_fields = ["collection", "frequency", "harvest_definition"]

    def perform_create(self, serializer):
        serializer.instance = planning.collection_mapping_save(user=self.request.user, **_fields(serializer))

    def perform_update(self, serializer):
        serializer.instance = planning.collection_mapping_save(
            user=self.request.user, mapping=serializer.instance, **_fields(serializer)
        )

    def perform_destroy(self, instance):
        planning.mapping_delete(mapping=instance, user=self.request.user)


class BudgetMappingViewSet(PlanningViewSetMixin, CrudViewSet):
    """(budget, depth) → the template and limits of a transferred record's configuration."""

    queryset = BudgetMapping.objects.select_related("template", "browser_template")
    serializer_class = BudgetMappingSerializer
    filterset_fields = ["budget", "depth", "template", "browser_template"]

    def perform_create(self, serializer):
        serializer.instance = planning.budget_mapping_save(user=self.request.user, **_fields(serializer))

    def perform_update(self, serializer):
        serializer.instance = planning.budget_mapping_save(
            user=self.request.user, mapping=serializer.instance, **_fields(serializer)
        )

    def perform_destroy(self, instance):
        planning.mapping_delete(mapping=instance, user=self.request.user)


class TransferViewSet(PlanningViewSetMixin, ReadOnlyViewSet):
    """Transfer reports; a POST runs the transfer of a collection, or of a definition's collections."""

    queryset = TransferReport.objects.select_related("user")
    serializer_class = TransferReportSerializer
    filterset_class = TransferReportFilterSet
    # The transfer writes domains, configurations and definitions' lists: a planner's change.
    action_permissions = {"create": (CHANGE, HarvestDefinition)}

    @property
    def pagination_class(self):
        # A transfer answers with all its reports, not a page of the list (and the schema says so).
        return None if getattr(self, "action", None) == "create" else api_settings.DEFAULT_PAGINATION_CLASS

    @extend_schema(
        filters=False,
        request=TransferRequestSerializer,
        responses={201: TransferReportSerializer(many=True), 200: TransferReportSerializer(many=True)},
        description="The reports of the transfer: one per collection (none when no collection is mapped "
        "to the harvest definition).",
    )
    def create(self, request):
        body = TransferRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        collection = body.validated_data.get("collection")
        if collection is not None:
            reports = [transfer.transfer_collection(collection=collection, user=request.user)]
        else:
            reports = transfer.transfer_for_definition(
                definition=body.validated_data["harvest_definition"], user=request.user
            )
        return Response(
            TransferReportSerializer(reports, many=True, context=self.get_serializer_context()).data,
            status=status.HTTP_201_CREATED if reports else status.HTTP_200_OK,
        )
