"""Reads on the selection side that are more than a filter."""

from django.urls import reverse
from django.utils.translation import gettext as _

from selection.models import Collection
from webarchive.permissions import VIEW, Role, can


def home_cards(user, roles) -> list[dict]:
    """The selection side's cards on the home page."""
    if not can(user, VIEW, Collection):
        return []
    cards = []
    url = reverse("selection:collection_list")
    if Role.LIBRARIAN in roles:
        cards.append(
            {
                "title": _("Your collections"),
                "count": user.collections.filter(is_active=True).count(),
                "text": _("Active collections you may propose URLs into."),
                "url": f"{url}?member=me&is_active=true",
            }
        )
    if roles & {Role.CURATOR, Role.ENGINEER, Role.MANAGER}:
        cards.append(
            {
                "title": _("Active collections"),
                "count": Collection.objects.filter(is_active=True).count(),
                "text": _("Collections whose records are being selected and harvested."),
                "url": f"{url}?is_active=true",
            }
        )
    return cards
