"""What a preparation takes from outside, and its bounds: the size of uploaded lists, and the
nameservers its DNS check may query.

**Uploads.** The lists uploaded for one run may hold ``PRELOAD_MAX_UPLOAD_BYTES`` together.
:class:`UploadLimit` is an upload handler put first in the request's chain, so it counts the bytes
before Django's own handlers keep them (in memory, or in a temporary file past
``FILE_UPLOAD_MAX_MEMORY_SIZE``): the file that goes past the limit is dropped there, with what
was kept of it, and every file after it too; at most the limit is ever written. :func:`store_uploads`
checks the limit again as it copies the files into ``PRELOAD_UPLOAD_DIR``.

**Nameservers.** A nameserver given for a run is an address the server sends packets to: it goes
under the address guard (:mod:`webarchive.netguard`) as the crawler's and the URL check's
connections do — public addresses only, private ones too when
``WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES`` is set — with one more exception, the addresses and
networks named in ``PRELOAD_ALLOWED_NAMESERVERS`` (the archive's own resolver on its internal
network). Cloud metadata services are refused whatever the settings.
"""

from __future__ import annotations

import contextlib
import ipaddress
import re
import uuid
from collections.abc import Iterable
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.core.files.uploadhandler import FileUploadHandler, SkipFile
from django.template.defaultfilters import filesizeformat
from django.utils import timezone
from django.utils.translation import gettext as _

from harvest.preload.dns import parse_nameserver
from webarchive.addresses import address_policy
from webarchive.netguard import AddressPolicy, metadata_provider

# Uploads -----------------------------------------------------------------------------------------


class UploadLimit(FileUploadHandler):
    """Counts the bytes of a request's files; a file that takes them past ``limit`` is skipped
    (with what was kept of it), and so is every file after it. ``refused``: (field, file name)."""

    def __init__(self, request=None, *, limit: int):
        super().__init__(request)
        self.limit = limit
        self.received = 0
        self.refused: list[tuple[str, str]] = []

    def new_file(self, field_name, file_name, *args, **kwargs):
        super().new_file(field_name, file_name, *args, **kwargs)
        if self.received > self.limit:
            self._refuse()

    def receive_data_chunk(self, raw_data, start):
        self.received += len(raw_data)
        if self.received > self.limit:
            self._refuse()
        return raw_data

    def file_complete(self, file_size):
        return None  # the next handlers keep the file

    def _refuse(self):
        self.refused.append((self.field_name, self.file_name))
        raise SkipFile


def too_large_message(file_name: str) -> str:
    return _(
        "%(file)s was not taken: the lists of one preparation may hold %(limit)s together"
        " (setting PRELOAD_MAX_UPLOAD_BYTES). Read a larger list from the server's disk with"
        " the preload_domains command."
    ) % {"file": file_name, "limit": filesizeformat(settings.PRELOAD_MAX_UPLOAD_BYTES)}


def upload_folder() -> Path:
    """A new folder of ``PRELOAD_UPLOAD_DIR`` for one run's lists (not created yet)."""
    return Path(settings.PRELOAD_UPLOAD_DIR) / f"{timezone.now():%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:8]}"


_UNSAFE_NAME = re.compile(r"[^\w.-]+")


def store_uploads(files: Iterable, folder: Path) -> list[Path]:
    """Copy uploaded files into ``folder``, chunk by chunk, in order; ValidationError (and nothing
    left in ``folder``) when they hold more than ``PRELOAD_MAX_UPLOAD_BYTES`` together."""
    files, limit = list(files), settings.PRELOAD_MAX_UPLOAD_BYTES
    if sum(upload.size or 0 for upload in files) > limit:
        raise ValidationError({"sources": [_too_large(files)]})
    stored: list[Path] = []
    written = 0
    try:
        for upload in files:
            folder.mkdir(parents=True, exist_ok=True)
            name = _UNSAFE_NAME.sub("_", Path(upload.name or "list").name)[-100:]
            target = folder / f"{uuid.uuid4().hex[:8]}-{name}"
            stored.append(target)
            with target.open("wb") as stream:
                for chunk in upload.chunks():
                    written += len(chunk)
                    if written > limit:  # a size that lied: stop before writing past the limit
                        raise ValidationError({"sources": [_too_large(files)]})
                    stream.write(chunk)
    except BaseException:
        remove_uploads(stored, folder)
        raise
    return stored


def _too_large(files: list) -> str:
    return too_large_message(", ".join(Path(upload.name or "list").name for upload in files))


def remove_uploads(paths: Iterable[Path], folder: Path) -> None:
    """Remove stored lists, and their folder once empty."""
    for path in paths:
        path.unlink(missing_ok=True)
    with contextlib.suppress(OSError):  # not empty (not ours alone), or never made
        folder.rmdir()


# Nameservers -------------------------------------------------------------------------------------


def nameserver_policy() -> AddressPolicy:
    """The address guard's policy for nameservers: the crawler's, and ``PRELOAD_ALLOWED_NAMESERVERS``."""
    networks = []
    for entry in settings.PRELOAD_ALLOWED_NAMESERVERS:
        try:
            networks.append(ipaddress.ip_network(entry.strip(), strict=False))
        except ValueError:
            raise ImproperlyConfigured(
                f"PRELOAD_ALLOWED_NAMESERVERS: {entry!r} is not an IP address or network"
            ) from None
    return address_policy(allowed_networks=networks)


def nameserver_problem(text: str, policy: AddressPolicy) -> str | None:
    """Why ``text`` cannot be a run's nameserver (not an address, or one the policy refuses), or None."""
    try:
        address, _port = parse_nameserver(text)
    except ValueError as error:
        return str(error)
    reason = policy.refusal(address)
    if reason is None:
        return None
    if metadata_provider(address):
        return _("“%(server)s” is not allowed as a nameserver: %(reason)s.") % {
            "server": text.strip(),
            "reason": reason,
        }
    return _(
        "“%(server)s” is not allowed as a nameserver: %(reason)s. Give a public resolver, or name"
        " this address in the setting PRELOAD_ALLOWED_NAMESERVERS."
    ) % {"server": text.strip(), "reason": reason}
