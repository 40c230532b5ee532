"""Reads of the measured change rates (storage.services.change_rates stores them)."""

from __future__ import annotations

from django.db.models import F
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from selection.choices import SUGGESTABLE_FREQUENCIES
from selection.models import Collection
from storage.models import ChangeEstimate

BOOST_FREQUENCIES = SUGGESTABLE_FREQUENCIES  # what a boost may set (not "once")


def collection_suggestions(collection: Collection):
    """The estimates of a collection's records whose suggested frequency differs from theirs
    (boosted records left out: their frequency is the boost's)."""
    return (
        ChangeEstimate.objects.filter(record__collection=collection, record__boost_until__isnull=True)
        .exclude(suggested_frequency="")
        .exclude(suggested_frequency=F("record__frequency"))
        .select_related("record")
        .order_by("record__url", "record_id")
    )


def rate_in_words(estimate: ChangeEstimate) -> str:
    """The estimate as people say it: "changes about every 3 days"."""
    interval = estimate.interval_days
    if interval is None:
        return ngettext(
            "no change seen in %(n)d visit",
            "no change seen in %(n)d visits",
            estimate.visits,
        ) % {"n": estimate.visits}
    if interval < 1:
        times = round(estimate.rate_per_day)
        return ngettext("changes about %(n)d time a day", "changes about %(n)d times a day", times) % {
            "n": times
        }
    if interval < 14:
        days = round(interval)
        return ngettext("changes about every day", "changes about every %(n)d days", days) % {"n": days}
    if interval < 60:
        weeks = round(interval / 7)
        return ngettext("changes about every week", "changes about every %(n)d weeks", weeks) % {"n": weeks}
    if interval < 730:
        months = round(interval / 30.4)
        return ngettext("changes about every month", "changes about every %(n)d months", months) % {
            "n": months
        }
    return _("changes less than once a year")
