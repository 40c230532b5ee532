"""The two endpoints the replay process reads: the CDX API (``/cdx``) and WARC bytes (``/warcs/<name>``).

They are machine endpoints: an anonymous request gets 401 with a Basic
challenge, not the login page. A request is accepted from a logged-in session,
with ``Authorization: Token <key>`` (the REST API's tokens), or with HTTP Basic
whose password is a token and whose user name is the token owner's (what pywb
sends for ``http://replay:KEY@host/cdx``, see :mod:`storage.services.replay`).
The user then needs the view permission on captures (``/cdx``) or the download
permission on WARC files (``/warcs/``: engineers and the replay account), decided by
:mod:`webarchive.permissions` like every page. ``/cdx`` lists only the captures the
caller may read from where they ask (storage.access); the replay process says for
whom it asks with ``access=<profile>`` (one pywb collection per kind of viewer).
"""

from __future__ import annotations

import base64
import binascii
import logging
import re
from functools import wraps

from django.contrib.auth.decorators import login_not_required
from django.http import HttpResponse, StreamingHttpResponse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_safe
from rest_framework.authentication import TokenAuthentication
from rest_framework.exceptions import AuthenticationFailed

from storage import access
from storage.backends import OutsideNode, stream_size
from storage.cdx import CdxQuery, CdxQueryError, captures_lookup
from storage.models import Capture, WarcFile
from storage.services.placement import good_replicas
from storage.services.replay import is_replay_account
from storage.services.replication import warc_file_open
from webarchive.permissions import DOWNLOAD, VIEW, can

logger = logging.getLogger(__name__)

REALM = "web archive"
BLOCK = 256 * 1024  # bytes read from a WARC file at a time
CONTENT_TYPES = {"cdxj": "text/x-cdxj; charset=utf-8", "json": "text/x-ndjson; charset=utf-8"}
_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


def _text(message: str, status: int) -> HttpResponse:
    return HttpResponse(message + "\n", status=status, content_type="text/plain; charset=utf-8")


def _challenge(message: str) -> HttpResponse:
    response = _text(message, 401)
    response["WWW-Authenticate"] = f'Basic realm="{REALM}"'
    return response


def _token_user(request):
    """The user of the request's token (``Token`` or Basic), None if it has none; raises on a bad one."""
    header = request.headers.get("Authorization", "")
    scheme, _space, credentials = header.partition(" ")
    scheme, credentials = scheme.lower(), credentials.strip()
    if scheme == "token":
        return TokenAuthentication().authenticate_credentials(credentials)[0]
    if scheme == "basic":
        try:
            username, _colon, key = base64.b64decode(credentials, validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            raise AuthenticationFailed(_("Malformed Basic credentials.")) from None
        user = TokenAuthentication().authenticate_credentials(key)[0]
        if username != user.get_username():
            raise AuthenticationFailed(_("This token belongs to another user."))
        return user
    return None


def archive_reader(model, action: str = VIEW):
    """Let in a session or token user allowed to ``action`` on ``model``: 401 (with a challenge) or 403
    otherwise."""

    def decorator(view):
        @login_not_required  # answered here with 401, not sent to the login page
        @require_safe
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            try:
                user = _token_user(request)
            except AuthenticationFailed as refusal:
                return _challenge(str(refusal.detail))
            if user is None and request.user.is_authenticated:
                user = request.user
            if user is None:
                return _challenge(
                    _(
                        "Authentication required: log in, or send a token "
                        "(Authorization: Token KEY, or HTTP Basic with the token as password)."
                    )
                )
            if not can(user, action, model):
                message = (
                    _("Your role does not allow you to view %(things)s.")
                    if action == VIEW
                    else _("Your role does not allow you to download %(things)s.")
                )
                return _text(message % {"things": model._meta.verbose_name_plural}, 403)
            request.user = user
            return view(request, *args, **kwargs)

        return wrapped

    return decorator


@archive_reader(Capture)
def cdx(request):
    """The CDX API: captures of a URL as CDXJ (or pywb's JSON) lines; see storage.cdx and docs/access.md."""
    try:
        query = CdxQuery.from_params(request.GET)
        viewer = _cdx_viewer(request)
    except CdxQueryError as error:
        return _text(str(error), 400)
    content_type = CONTENT_TYPES[query.output]
    if request.method == "HEAD":
        return HttpResponse(content_type=content_type)
    if is_replay_account(request.user):
        lines = access.replay_cdx_lines(query, viewer)
    else:
        captures = access.visible_captures(Capture.objects.all(), viewer)
        lines = (query.line(capture) for capture in captures_lookup(query, captures))
    return StreamingHttpResponse((line.encode() for line in lines), content_type=content_type)


def _cdx_viewer(request) -> access.Viewer:
    """Whose view of the archive a CDX query gets: the caller's from where they ask, or, for the replay
    process, the profile it names (``access=``: public, reader, reader-room, staff; staff without it)."""
    profile = request.GET.get("access", "")
    if is_replay_account(request.user):
        if profile and profile not in access.PROFILES:
            raise CdxQueryError(
                _("access=%(profile)s: must be one of %(profiles)s.")
                % {"profile": profile, "profiles": ", ".join(access.PROFILES)}
            )
        return access.PROFILES[profile or access.Viewer(access.STAFF).profile]
    return access.viewer_of(request.user, access.client_address(request.META))


class FileSlice:
    """Bytes ``[start, start + length)`` of an open file, read in blocks; closing it closes the file."""

    def __init__(self, stream, start: int, length: int):
        self.stream, self.start, self.length = stream, start, length

    def __iter__(self):
        self.stream.seek(self.start)
        left = self.length
        while left > 0:
            block = self.stream.read(min(BLOCK, left))
            if not block:
                return  # the file shrank since it was opened: nothing sensible left to send
            left -= len(block)
            yield block

    def close(self):
        self.stream.close()


def byte_range(header: str, size: int) -> tuple[int, int] | None:
    """The (first, last) byte of a single ``Range: bytes=…``; None to send the whole file.

    A header that is not one well-formed byte range is ignored (RFC 9110 lets a
    server do so): several ranges are answered with the whole file. Raises
    ValueError when the range is well formed but not satisfiable.
    """
    match = _RANGE.match(header.strip().replace(" ", ""))
    if not match or match.group(1) == match.group(2) == "":
        return None
    first, last = match.groups()
    if first == "":  # "bytes=-N": the last N bytes
        length = int(last)
        if length == 0 or size == 0:
            raise ValueError
        return max(size - length, 0), size - 1
    first = int(first)
    if last != "" and int(last) < first:
        return None  # not a valid range: ignored
    if first >= size:
        raise ValueError
    return first, size - 1 if last == "" else min(int(last), size - 1)


def _open_warc(warc: WarcFile):
    """The file's bytes, open (closed by FileSlice once streamed); None when they are not there."""
    try:
        return warc_file_open(warc)
    except (FileNotFoundError, IsADirectoryError):
        return None


def _links_out(warc: WarcFile) -> list[str]:
    """Why good replicas of the file were not read: those whose path leads out of their node."""
    reasons = []
    for replica in good_replicas(warc).select_related("node"):
        real_path = getattr(replica.node.backend_instance(), "real_path", None)
        if real_path is None:
            continue  # an object store: no links to follow out of it
        try:
            real_path(replica.relative_path)
        except OutsideNode as refusal:
            reasons.append(str(refusal))
    return reasons


@archive_reader(WarcFile, DOWNLOAD)
def warc_bytes(request, filename: str):
    """The bytes of a WARC file of the archive, whole or one HTTP range (for pywb's archive_paths)."""
    if "/" in filename or "\\" in filename or filename in ("", ".", ".."):
        return _text(_("No WARC file of this name."), 404)
    warc = WarcFile.objects.filter(name=filename).first()
    if warc is None:
        return _text(_("No WARC file of this name."), 404)
    stream = _open_warc(warc)
    if stream is None and (links_out := _links_out(warc)):
        # Not a passing outage: what is there is not the archive's file, and is never served.
        logger.error("WARC file %s refused: %s", warc.name, "; ".join(links_out))
        return _text(_("No WARC file of this name."), 404)
    if stream is None:
        logger.error("WARC file %s is registered at %s but is not there", warc.name, warc.path)
        return _text(
            _("WARC file %(name)s is in the archive but its bytes are not available now.")
            % {"name": warc.name},
            503,
        )
    size = stream_size(stream)
    try:
        wanted = byte_range(request.headers.get("Range", ""), size)
    except ValueError:
        stream.close()
        response = _text(_("Range not satisfiable: the file has %(size)d bytes.") % {"size": size}, 416)
        response["Content-Range"] = f"bytes */{size}"
        return response
    first, last = wanted if wanted is not None else (0, size - 1)
    length = last - first + 1
    status = 206 if wanted is not None else 200
    # WARC files (gzip per record or not) are application/warc, never a Content-Encoding, which would
    # let HTTP clients inflate the bytes whose offsets the index gives; ARC files have no registered type.
    content_type = (
        "application/warc" if warc.name.endswith((".warc", ".warc.gz")) else "application/octet-stream"
    )
    if request.method == "HEAD":
        stream.close()
        response = HttpResponse(status=status, content_type=content_type)
    else:
        response = StreamingHttpResponse(
            FileSlice(stream, first, length), status=status, content_type=content_type
        )
    response["Content-Length"] = str(length)
    response["Accept-Ranges"] = "bytes"
    if wanted is not None:
        response["Content-Range"] = f"bytes {first}-{last}/{size}"
    return response
