from django.utils.translation import gettext_lazy as _
from rest_framework import serializers

from selection.choices import Budget, Depth, Frequency, RecordStatus
from selection.models import Collection, CompatibilityRule, Record, Theme
from webarchive.api.fields import (
    CharField,
    IdRelatedField,
    ModelSerializer,
    NameRelatedField,
    VersionedModelSerializer,
    VersionField,
)
from webarchive.permissions import SELECTION_PEOPLE, people_with_roles


class CollectionSerializer(VersionedModelSerializer):
    """A collection; changing one needs the ``version`` read before."""

    members = NameRelatedField(
        slug_field="username", many=True, required=False, queryset=people_with_roles(SELECTION_PEOPLE)
    )

    class Meta:
        model = Collection
        fields = [
            "id",
            "url",
            "name",
            "description",
            "kind",
            "is_active",
            "members",
            "default_budget",
            "default_frequency",
            "default_depth",
            "created_at",
            "updated_at",
            "version",
        ]
        read_only_fields = ["created_at", "updated_at"]
        extra_kwargs = {"url": {"view_name": "api:collection-detail"}}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if isinstance(self.instance, Collection):  # its members stay, whatever their role now
            current = list(self.instance.members.values_list("pk", flat=True))
            self.fields["members"].child_relation.queryset = people_with_roles(SELECTION_PEOPLE, keep=current)


class ThemeSerializer(ModelSerializer):
    class Meta:
        model = Theme
        fields = ["id", "collection", "name", "is_active"]


class CompatibilityRuleSerializer(ModelSerializer):
    class Meta:
        model = CompatibilityRule
        fields = ["id", "budget", "frequency", "depth", "reason"]


class KeywordListField(serializers.ListField):
    """Keywords as a list of names, written as names (new ones are created)."""

    child = CharField(max_length=100)

    def to_representation(self, data):
        return sorted(keyword.name for keyword in data.all())


class RecordSerializer(VersionedModelSerializer):
    """A record. Creating one runs the online check; updating one needs the ``version`` read before."""

    # Librarians and curators (never a service account); a record's current one stays.
    responsible = NameRelatedField(
        slug_field="username", queryset=people_with_roles(SELECTION_PEOPLE), required=False
    )
    keywords = KeywordListField(required=False)
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    modified_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    url = CharField(max_length=2100)
    budget = serializers.ChoiceField(choices=Budget.choices, required=False)
    frequency = serializers.ChoiceField(choices=Frequency.choices, required=False)
    depth = serializers.ChoiceField(choices=Depth.choices, required=False)
    check_override_reason = CharField(required=False, allow_blank=True)

    class Meta:
        model = Record
        fields = [
            "id",
            "collection",
            "url",
            "supplementary_urls",
            "responsible",
            "budget",
            "frequency",
            "depth",
            "needs_browser",
            "theme",
            "keywords",
            "content_notes",
            "technical_notes",
            "is_active",
            "status",
            "status_reason",
            "check_status",
            "check_result",
            "checked_at",
            "check_override_reason",
            "created_at",
            "created_by",
            "modified_at",
            "modified_by",
            "version",
        ]
        read_only_fields = [
            "status",
            "status_reason",
            "check_status",
            "check_result",
            "checked_at",
            "created_at",
            "modified_at",
        ]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if isinstance(self.instance, Record):
            self.fields["responsible"].queryset = people_with_roles(
                SELECTION_PEOPLE, keep=[self.instance.responsible_id]
            )


class RecordStatusSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=RecordStatus.choices)
    reason = CharField(required=False, allow_blank=True, default="")
    version = VersionField(required=True, help_text=_("The version of the record you read."))


class RecordTransferSerializer(serializers.Serializer):
    collection = IdRelatedField(queryset=Collection.objects.all())
    theme = IdRelatedField(queryset=Theme.objects.all())
    version = VersionField(required=True, help_text=_("The version of the record you read."))


class UrlCheckRequestSerializer(serializers.Serializer):
    url = CharField(max_length=2100)
    collection = IdRelatedField(queryset=Collection.objects.all(), required=False)


class DuplicateSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    url = CharField()
    collection = serializers.IntegerField()
    collection_name = CharField()


class DuplicatesSerializer(serializers.Serializer):
    same = DuplicateSerializer(
        many=True, help_text=_("The same URL (http/https, www. and a final slash ignored).")
    )
    same_host = DuplicateSerializer(many=True)
    same_domain = DuplicateSerializer(many=True)
    in_this_collection = serializers.BooleanField(
        help_text=_("The same URL is already in the given collection.")
    )


class UrlCheckResponseSerializer(serializers.Serializer):
    url = CharField(help_text=_("The URL normalised."))
    check = serializers.JSONField(
        help_text=_("status, message, hops (url, status_code, location, …), final_url.")
    )
    selectable = serializers.BooleanField()
    duplicates = DuplicatesSerializer()
