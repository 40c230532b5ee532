"""Filters of the capture lists (a job's, a domain's captures)."""

import django_filters
from django.utils.translation import gettext_lazy as _

from storage.models import Capture


class CaptureFilterSet(django_filters.FilterSet):
    """Captures by HTTP status, MIME type and record type (exact values, as the counts show them)."""

    status = django_filters.NumberFilter(
        field_name="status", label=_("HTTP status"), min_value=0, max_value=999
    )
    mime = django_filters.CharFilter(field_name="mime", label=_("MIME type"))
    record_type = django_filters.ChoiceFilter(
        field_name="record_type", choices=Capture.RecordType.choices, label=_("Record type")
    )

    class Meta:
        model = Capture
        fields = ["status", "mime", "record_type"]
