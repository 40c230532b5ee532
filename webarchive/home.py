"""The home page's cards: for each role the user holds, what there is to do next.

Each app contributes a ``home_cards(user, roles)`` selector listed in
``CARD_SOURCES``; a card is a dict with ``title``, ``count``, ``text`` and an
optional ``url``.
"""

from django.contrib.auth import get_user_model
from django.urls import reverse
from django.utils.module_loading import import_string
from django.utils.translation import gettext as _

from webarchive.permissions import Role, is_administrator, user_roles

CARD_SOURCES = ["selection.selectors.home_cards"]


def cards_for(user) -> list[dict]:
    roles = user_roles(user)
    cards = []
    for source in CARD_SOURCES:
        cards.extend(import_string(source)(user, roles))
    if is_administrator(user):
        without_role = (
            get_user_model()
            .objects.filter(is_active=True, is_superuser=False)
            .exclude(groups__name__in=Role.values)
        )
        cards.append(
            {
                "title": _("Users without a role"),
                "count": without_role.count(),
                "text": _("Active accounts that can log in but see nothing until given a role."),
                "url": reverse("admin:auth_user_changelist"),
            }
        )
    return cards
