"""Writes on accounts: API tokens and demo users."""

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.translation import gettext as _
from rest_framework.authtoken.models import Token

from webarchive.permissions import Role, user_set_roles


@transaction.atomic
def user_token_regenerate(*, user) -> Token:
    """Give the user a new REST API token, revoking the old one."""
    Token.objects.filter(user=user).delete()
    return Token.objects.create(user=user)


@transaction.atomic
def user_ensure(
    *, username: str, password: str, roles: set[Role] = frozenset(), superuser: bool = False, **fields
):
    """Create or update a local account with exactly these roles and this password."""
    user, _created = get_user_model().objects.get_or_create(username=username, defaults=fields)
    for name, value in fields.items():
        setattr(user, name, value)
    user.is_active = True
    user.is_superuser = user.is_staff = superuser
    user.set_password(password)
    user.full_clean()
    user.save()
    user_set_roles(user=user, roles=roles)
    return user


def user_language_set(*, user, language: str):
    """Remember the interface language a person chose ("" : their browser's); refuses another code."""
    from webarchive.models import UserPreference

    if language and language not in dict(settings.LANGUAGES):
        raise ValidationError(
            _("“%(code)s” is not a language of this site; choose one of: %(codes)s.")
            % {"code": language, "codes": ", ".join(dict(settings.LANGUAGES))},
            code="language",
        )
    preference, _created = UserPreference.objects.update_or_create(user=user, defaults={"language": language})
    return preference
