"""Reads of the curators' access pages: what an access rule covers, what an exclusion covers, and the
exclusions in force first."""

from __future__ import annotations

from django.db.models import Case, IntegerField, Q, QuerySet, Value, When

from harvest.models import CollectionMapping, HarvestDefinition
from storage.models import Capture
from storage.models_access import AccessRule, Exclusion, ExclusionKind


def rule_definitions(rule: AccessRule) -> QuerySet:
    """The harvest definitions whose captures a rule covers: those its collection is mapped to, or its
    own definition."""
    if rule.collection_id:
        mapped = CollectionMapping.objects.filter(collection_id=rule.collection_id).values(
            "harvest_definition"
        )
        return HarvestDefinition.objects.filter(pk__in=mapped).order_by("name")
    return HarvestDefinition.objects.filter(pk=rule.harvest_definition_id)


def rule_capture_count(rule: AccessRule) -> int:
    """How many captures a rule covers (those of its harvest definitions' jobs)."""
    return Capture.objects.filter(job__harvest_definition__in=rule_definitions(rule).values("pk")).count()


def exclusion_capture_filter(exclusion: Exclusion) -> Q:
    """The captures an exclusion covers, as a ``Capture`` filter: the key conditions of
    storage.access.excluded for this one exclusion (a SURT key range, each on the urlkey index)."""
    if exclusion.kind == ExclusionKind.URL:
        return Q(urlkey=exclusion.key)
    covered = Q(urlkey__gte=exclusion.key, urlkey__lt=exclusion.key_end)
    if exclusion.kind == ExclusionKind.DOMAIN and exclusion.port_key:
        covered |= Q(urlkey__gte=exclusion.port_key, urlkey__lt=exclusion.port_key_end)
    return covered


def exclusion_capture_count(exclusion: Exclusion) -> int:
    """How many captures the exclusion's URLs have today, whether or not it is in force."""
    return Capture.objects.filter(exclusion_capture_filter(exclusion)).count()


def exclusions_in_force_first(queryset: QuerySet, day=None) -> QuerySet:
    """The exclusions of ``queryset``: those in force on ``day`` (today) first, the newest first."""
    in_force = Q(pk__in=Exclusion.objects.active(day).values("pk"))
    return queryset.annotate(
        not_in_force=Case(When(in_force, then=Value(0)), default=Value(1), output_field=IntegerField())
    ).order_by("not_in_force", "-created_at", "-pk")
