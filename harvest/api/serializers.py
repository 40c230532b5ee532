"""Serializers of the planning API: they check the shape of a request; the services decide the rest.

Constraint checks are left to the services (``Meta.validators = []``), so a
refused write says the same thing in the API as on the pages.
"""

from django.core.exceptions import ValidationError as DjangoValidationError
from django.urls import reverse
from django.utils.translation import gettext_lazy as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from harvest.choices import HarvestKind
from harvest.models import (
    BudgetMapping,
    CollectionMapping,
    Domain,
    DomainConfiguration,
    GlobalCrawlerTrapList,
    HarvestChannel,
    HarvestDefinition,
    HarvestTemplate,
    NewsArticle,
    Schedule,
    SeedList,
    TransferReport,
)
from harvest.services.planning import SELECTIVE_FIELDS, SNAPSHOT_FIELDS
from harvest.validators import domain_name_normalise
from selection.models import Collection
from webarchive.api.fields import (
    CharField,
    DateTimeField,
    IdField,
    IdRelatedField,
    ModelSerializer,
    NameRelatedField,
    VersionedModelSerializer,
    VersionField,
)

# Limits are -1 (no limit) or more; said at the field before the service's constraint says it for the row.
LIMIT = {"min_value": -1}
NEXT_RUNS = 5


class CreateOnlyMixin:
    """Fields set when an object is created and fixed after (a domain's name, a definition's kind).

    Sending the value it already has is accepted (a PUT of what GET gave);
    another value is a 400 at that field.
    """

    create_only_fields: tuple[str, ...] = ()

    def validate(self, attrs):
        attrs = super().validate(attrs)
        if self.instance is None:
            return attrs
        errors = {}
        for name in self.create_only_fields:
            if name in attrs and not self.same_value(name, attrs.pop(name)):
                errors[name] = [
                    _("This is set when the %(thing)s is created and cannot be changed.")
                    % {"thing": self.Meta.model._meta.verbose_name}
                ]
        if errors:
            raise serializers.ValidationError(errors)
        return attrs

    def same_value(self, name, value) -> bool:
        return value == getattr(self.instance, name)


class NamedSerializer(serializers.Serializer):
    """An object by its id and name."""

    id = serializers.IntegerField(read_only=True)
    name = CharField(read_only=True)


# Domains ---------------------------------------------------------------------------------------


class DomainSerializer(CreateOnlyMixin, VersionedModelSerializer):
    """A domain with the names of its configurations and seed lists. Never deleted."""

    name = CharField(max_length=255, help_text=_("A registered domain name (example.fr); set at creation."))
    seeds = CharField(
        write_only=True,
        required=False,
        help_text=_(
            "Creation only: the URLs of the default seed list, one per line "
            "(http and https, with and without www, when left out)."
        ),
    )
    alias_of = serializers.SlugRelatedField(slug_field="name", read_only=True, allow_null=True)
    alias_expires_at = DateTimeField(read_only=True, allow_null=True)
    is_live_alias = serializers.BooleanField(read_only=True)
    default_configuration = IdRelatedField(
        queryset=DomainConfiguration.objects.all(),
        required=False,
        help_text=_("One of this domain's configurations; a new domain gets one made for it."),
    )
    configurations = NamedSerializer(many=True, read_only=True)
    seed_lists = NamedSerializer(many=True, read_only=True)

    create_only_fields = ("name",)

    class Meta:
        model = Domain
        fields = [
            "id",
            "name",
            "comments",
            "crawler_traps",
            "is_active",
            "alias_of",
            "alias_updated_at",
            "alias_expires_at",
            "is_live_alias",
            "default_configuration",
            "configurations",
            "seed_lists",
            "seeds",
            "created_at",
            "updated_at",
            "version",
        ]
        read_only_fields = ["alias_updated_at", "created_at", "updated_at"]
        validators = []

    def same_value(self, name, value) -> bool:
        try:
            return domain_name_normalise(value) == self.instance.name
        except DjangoValidationError:
            return False

    def validate(self, attrs):
        attrs = super().validate(attrs)
        if self.instance is not None and "seeds" in attrs:
            raise serializers.ValidationError(
                {"seeds": [_("Seeds are given at creation only; change them in the domain's seed lists.")]}
            )
        if self.instance is None and "default_configuration" in attrs:
            raise serializers.ValidationError(
                {
                    "default_configuration": [
                        _("A new domain gets a default configuration; choose another one once it exists.")
                    ]
                }
            )
        return attrs


class DomainAliasSerializer(serializers.Serializer):
    alias_of = CharField(
        allow_null=True,
        help_text=_("The name of the domain this one is an alias of; null to end the alias."),
    )


class DomainBulkCreateSerializer(serializers.Serializer):
    text = CharField(trim_whitespace=False, help_text=_("One domain per line; # starts a comment."))
    skip_invalid = serializers.BooleanField(
        default=False,
        help_text=_("Create the valid names and report the refused lines; otherwise refused lines stop all."),
    )


class LineErrorSerializer(serializers.Serializer):
    line = serializers.IntegerField()
    text = CharField()
    reason = CharField()


class DomainListReportSerializer(serializers.Serializer):
    created = serializers.IntegerField(help_text=_("How many domains were created."))
    new = serializers.ListField(child=CharField(), help_text=_("The names created."))
    existing = serializers.ListField(child=CharField(), help_text=_("Names already known."))
    errors = LineErrorSerializer(many=True, help_text=_("The lines refused, and why."))


class SeedListSerializer(CreateOnlyMixin, VersionedModelSerializer):
    domain = NameRelatedField(slug_field="name", queryset=Domain.objects.all())
    seed_urls = serializers.ListField(
        child=CharField(), read_only=True, help_text=_("The seeds normalised, once each.")
    )
    configurations = NamedSerializer(many=True, read_only=True)

    create_only_fields = ("domain",)

    class Meta:
        model = SeedList
        fields = [
            "id",
            "domain",
            "name",
            "seeds",
            "seed_urls",
            "comments",
            "configurations",
            "updated_at",
            "version",
        ]
        read_only_fields = ["updated_at"]
        validators = []


class ConfigurationSerializer(CreateOnlyMixin, VersionedModelSerializer):
    domain = NameRelatedField(slug_field="name", queryset=Domain.objects.all())
    seed_lists = IdRelatedField(
        many=True,
        queryset=SeedList.objects.all(),
        required=False,
        help_text=_("Seed lists of the same domain; at least one."),
    )
    is_default = serializers.SerializerMethodField()
    harvest_definitions = IdRelatedField(many=True, read_only=True)

    create_only_fields = ("domain",)

    class Meta:
        model = DomainConfiguration
        fields = [
            "id",
            "domain",
            "name",
            "template",
            "seed_lists",
            "max_objects",
            "max_bytes",
            "max_request_rate",
            "comments",
            "source_collection",
            "is_default",
            "harvest_definitions",
            "updated_at",
            "version",
        ]
        read_only_fields = ["source_collection", "updated_at"]
        extra_kwargs = {"max_objects": LIMIT, "max_bytes": LIMIT}
        validators = []

    @extend_schema_field(OpenApiTypes.BOOL)
    def get_is_default(self, configuration) -> bool:
        return configuration.domain.default_configuration_id == configuration.pk


class ConfigurationLimitsSerializer(serializers.Serializer):
    """Which configurations (ids, or the filters of the configuration list) get which new budget."""

    ids = serializers.ListField(child=IdField(), required=False, allow_empty=False)
    filter = serializers.DictField(
        required=False,
        help_text=_('The configuration list\'s filters, e.g. {"harvest_definition": 3, "domain": "fr"}.'),
    )
    max_objects = serializers.IntegerField(required=False, allow_null=True, **LIMIT)
    max_bytes = serializers.IntegerField(required=False, allow_null=True, **LIMIT)

    def validate(self, attrs):
        if ("ids" in attrs) == ("filter" in attrs):
            raise serializers.ValidationError(
                _("Give either the ids of the configurations or a filter, not both.")
                if "ids" in attrs
                else _("Give the ids of the configurations, or a filter.")
            )
        return attrs


class ConfigurationLimitsResultSerializer(serializers.Serializer):
    changed = serializers.IntegerField(help_text=_("How many configurations got the new limits."))


# Templates, schedules, channels, traps --------------------------------------------------------------


class TemplateSerializer(VersionedModelSerializer):
    """A template. Its ``version`` numbers its saves, as every object's; ``settings_version`` numbers
    the changes of its crawler settings (what a job's ``template_version`` refers to)."""

    version = VersionField(source="revision")
    settings_version = serializers.IntegerField(
        source="version",
        read_only=True,
        help_text=_("Raised by a change of a crawler setting; a job keeps the one it was made with."),
    )

    class Meta:
        model = HarvestTemplate
        fields = [
            "id",
            "name",
            "description",
            "is_active",
            *HarvestTemplate.SETTINGS,
            "settings_version",
            "version",
            "updated_at",
        ]
        read_only_fields = ["updated_at"]
        validators = []


class ScheduleSerializer(VersionedModelSerializer):
    frequency = CharField(
        read_only=True, help_text=_("once, daily, weekly, monthly, twice-yearly, annual or custom.")
    )
    next_runs = serializers.SerializerMethodField(help_text=_("The next 5 run dates."))

    class Meta:
        model = Schedule
        fields = [
            "id",
            "name",
            "comments",
            "start",
            "every",
            "unit",
            "at_minute",
            "at_hour",
            "at_weekday",
            "at_day",
            "end_kind",
            "max_runs",
            "end_date",
            "frequency",
            "next_runs",
            "updated_at",
            "version",
        ]
        read_only_fields = ["updated_at"]
        validators = []

    @extend_schema_field(serializers.ListField(child=DateTimeField()))
    def get_next_runs(self, schedule) -> list:
        field = DateTimeField()
        return [field.to_representation(run) for run in schedule.runs(count=NEXT_RUNS)]


class ChannelSerializer(VersionedModelSerializer):
    class Meta:
        model = HarvestChannel
        fields = ["id", "name", "queue", "is_snapshot", "is_default", "comments", "version"]
        validators = []


class TrapListSerializer(VersionedModelSerializer):
    patterns = serializers.ListField(
        source="trap_list",
        child=CharField(),
        read_only=True,
        help_text=_("The regular expressions, comments left out."),
    )

    class Meta:
        model = GlobalCrawlerTrapList
        fields = ["id", "name", "description", "is_active", "traps", "patterns", "version"]
        validators = []


# Harvest definitions ---------------------------------------------------------------------------


class HarvestDefinitionSerializer(CreateOnlyMixin, VersionedModelSerializer):
    """A selective or snapshot harvest definition. Never deleted; its kind is set at creation."""

    kind = serializers.ChoiceField(choices=HarvestKind.choices, help_text=_("Set at creation."))
    channel = IdRelatedField(
        queryset=HarvestChannel.objects.all(),
        required=False,
        help_text=_("The default channel of the kind when left out."),
    )
    configuration_count = serializers.SerializerMethodField()
    configurations_url = serializers.SerializerMethodField(
        help_text=_("The list of the configurations it harvests.")
    )
    news_articles_waiting = serializers.SerializerMethodField(
        help_text=_(
            "News: the articles its runs found that its deeper definition has not had yet; a deeper "
            "definition: those its news definitions found for its next run."
        )
    )

    create_only_fields = ("kind",)

    class Meta:
        model = HarvestDefinition
        fields = [
            "id",
            "name",
            "comments",
            "kind",
            "is_active",
            "channel",
            "schedule",
            "next_date",
            "runs_done",
            "crawler_traps",
            "max_objects_per_domain",
            "max_bytes_per_domain",
            "max_job_seconds",
            "continue_from",
            "news",
            "news_feeds",
            "news_articles_waiting",
            "configuration_count",
            "configurations_url",
            "created_at",
            "updated_at",
            "version",
        ]
        read_only_fields = ["next_date", "runs_done", "created_at", "updated_at"]
        extra_kwargs = {"max_objects_per_domain": LIMIT, "max_bytes_per_domain": LIMIT}
        validators = []

    def validate(self, attrs):
        attrs = super().validate(attrs)
        kind = self.instance.kind if self.instance is not None else attrs.get("kind")
        used = SELECTIVE_FIELDS if kind == HarvestKind.SELECTIVE else SNAPSHOT_FIELDS
        errors = {}
        for name in [name for name in attrs if name != "kind" and name not in used]:
            current = (
                getattr(self.instance, name)
                if self.instance is not None
                else HarvestDefinition._meta.get_field(name).get_default()
            )
            if attrs[name] == current:
                del attrs[name]  # what GET shows for the other kind: a PUT may send it back
            else:
                errors[name] = [
                    _("Not used by a %(kind)s harvest.") % {"kind": HarvestKind(kind).label.lower()}
                ]
        if self.instance is None and kind == HarvestKind.SELECTIVE and not attrs.get("schedule"):
            errors["schedule"] = [_("A selective harvest needs a schedule.")]
        if errors:
            raise serializers.ValidationError(errors)
        return attrs

    @extend_schema_field(OpenApiTypes.INT)
    def get_configuration_count(self, definition) -> int:
        count = getattr(definition, "configuration_count", None)
        return definition.configurations.count() if count is None else count

    @extend_schema_field(OpenApiTypes.INT)
    def get_news_articles_waiting(self, definition) -> int:
        articles = NewsArticle.objects.filter(fed_to__isnull=True)
        if definition.news:
            return articles.filter(definition=definition, definition__news_feeds__isnull=False).count()
        return articles.filter(definition__news_feeds=definition).count()

    @extend_schema_field(OpenApiTypes.URI)
    def get_configurations_url(self, definition) -> str:
        url = reverse("api:domainconfiguration-list") + f"?harvest_definition={definition.pk}"
        request = self.context.get("request")
        return request.build_absolute_uri(url) if request else url


class DefinitionConfigurationsSerializer(serializers.Serializer):
    add = serializers.ListField(
        child=IdField(), required=False, default=list, help_text=_("Configuration ids.")
    )
    remove = serializers.ListField(
        child=IdField(), required=False, default=list, help_text=_("Configuration ids.")
    )

    def validate(self, attrs):
        if not attrs["add"] and not attrs["remove"]:
            raise serializers.ValidationError(_("Give configurations to add or to remove."))
        return attrs


# Mappings and transfers ------------------------------------------------------------------------


class CollectionMappingSerializer(ModelSerializer):
    # Any definition: the service says why a snapshot cannot be the target.
    harvest_definition = IdRelatedField(queryset=HarvestDefinition.objects.all())

    class Meta:
        model = CollectionMapping
        fields = ["id", "collection", "frequency", "harvest_definition"]
        validators = []


class BudgetMappingSerializer(ModelSerializer):
    class Meta:
        model = BudgetMapping
        fields = ["id", "budget", "depth", "template", "browser_template", "max_objects", "max_bytes"]
        extra_kwargs = {"max_objects": LIMIT, "max_bytes": LIMIT}
        validators = []


class TransferReportSerializer(ModelSerializer):
    user = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True, help_text=_("Null for a scheduled transfer.")
    )

    class Meta:
        model = TransferReport
        fields = [
            "id",
            "created_at",
            "user",
            "collection",
            "harvest_definition",
            "created",
            "updated",
            "unchanged",
            "detached",
            "skipped",
            "details",
        ]
        read_only_fields = fields


class TransferRequestSerializer(serializers.Serializer):
    collection = IdRelatedField(
        queryset=Collection.objects.all(), required=False, help_text=_("Transfer this collection's records.")
    )
    harvest_definition = IdRelatedField(
        queryset=HarvestDefinition.objects.all(),
        required=False,
        help_text=_("Transfer every collection mapped to this harvest definition."),
    )

    def validate(self, attrs):
        if ("collection" in attrs) == ("harvest_definition" in attrs):
            raise serializers.ValidationError(_("Give either a collection or a harvest definition."))
        return attrs
