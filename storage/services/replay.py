"""The replay process's account: a read-only token for the CDX API and the WARC bytes.

pywb runs as its own process and reads ``/cdx`` and ``/warcs/`` like any
client, so it needs credentials. It gets those of the "replay" account: no
password (nobody logs in with it), no role (no area and no REST resource lets
it in), only the permissions to view captures and WARC files, given to the user
directly. Its token goes in pywb's configuration as the password of the URLs
(``cdx+http://replay:KEY@host/cdx``), which pywb sends as HTTP Basic.
"""

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.db import transaction
from rest_framework.authtoken.models import Token

from storage.models import Capture, WarcFile
from webarchive.permissions import DOWNLOAD, VIEW
from webarchive.services import user_token_regenerate

REPLAY_USERNAME = "replay"
# Exactly these permissions: view captures and WARC files, and read the files' bytes.
REPLAY_PERMISSIONS = ((Capture, VIEW), (WarcFile, VIEW), (WarcFile, DOWNLOAD))


def is_replay_account(user) -> bool:
    """Whether the user is the replay process (which tells the CDX API whose view it asks for)."""
    return bool(user is not None and user.is_authenticated and user.get_username() == REPLAY_USERNAME)


@transaction.atomic
def replay_account_ensure() -> str:
    """Create or repair the replay account (view captures, view and read WARC files, nothing else); its
    token key."""
    user, _created = get_user_model().objects.get_or_create(username=REPLAY_USERNAME)
    user.is_active = True
    user.is_staff = user.is_superuser = False
    if user.has_usable_password():
        user.set_unusable_password()
    user.save()
    # Exactly these permissions: a group (a role) or another permission given by hand would widen it.
    user.groups.clear()
    user.user_permissions.set(
        [
            Permission.objects.get(
                content_type=ContentType.objects.get_for_model(model),
                codename=f"{action}_{model._meta.model_name}",
            )
            for model, action in REPLAY_PERMISSIONS
        ]
    )
    token, _created = Token.objects.get_or_create(user=user)
    return token.key


@transaction.atomic
def replay_token_rotate() -> str:
    """Give the replay account a new token (the old one stops working at once); the new key."""
    replay_account_ensure()
    return user_token_regenerate(user=get_user_model().objects.get(username=REPLAY_USERNAME)).key
