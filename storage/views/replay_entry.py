"""The replay entry: the application decides whether a person may replay a URL, then sends them to pywb.

``/access/replay/<timestamp>/<url>`` is where every replay link of the application points, and where
the replay gate (storage/replay_gate.py) sends a browser that has no valid ticket. If the URL has
captures this person may read from where they are (storage.access), the answer is a redirect to the
gate with a ticket (signed, short-lived, bound to the client's address) and the pywb address in the
collection of their kind of viewer, which holds only what they may read. Otherwise: the login page
for an anonymous visitor, a 403 page naming the access rule for someone logged in, a 404 when the
URL is not in the archive (or is excluded, for whom exclusions hide it).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.contrib.auth.views import redirect_to_login
from django.http import HttpResponseRedirect
from django.shortcuts import render
from django.urls import re_path
from django.utils.translation import gettext as _
from django.views.decorators.http import require_safe

from storage import access, selectors
from storage.models import Capture, WarcFile
from storage.replay import RAW_PROFILES, gate_ticket_key, pywb_url
from storage.replay_ticket import ticket_make
from webarchive.permissions import DOWNLOAD, can

# pywb's addresses: a timestamp of up to 14 digits (and "*" for pywb's list of captures), perhaps a
# modifier (mp_, im_, id_…), then the URL.
STAMP = r"\d{0,14}\*?(?:[a-z]{2}_)?"
_STAMP = re.compile(r"^(\d{0,14})\*?([a-z]{2}_)?$")
RAW_MODIFIER = "id_"


def _refusal(request, *, status: int, title: str, message: str, decision=None, url: str = ""):
    return render(
        request,
        "storage/replay_refused.html",
        {"title": title, "message": message, "decision": decision, "url": url},
        status=status,
    )


def _closest(captures, timestamp: str) -> Capture | None:
    """The capture nearest to a 14-digit (or shorter) timestamp, the latest one without a date."""
    if not timestamp:
        return captures.order_by("-timestamp", "-pk").first()
    moment = datetime.strptime(timestamp.ljust(14, "0")[:14], "%Y%m%d%H%M%S").replace(tzinfo=UTC)
    after = captures.filter(timestamp__gte=moment).order_by("timestamp", "pk").first()
    before = captures.filter(timestamp__lt=moment).order_by("-timestamp", "-pk").first()
    if after is None or before is None:
        return after or before
    return after if after.timestamp - moment <= moment - before.timestamp else before


@login_not_required  # anonymous visitors are sent to the login page here, or let in (ACCESS_ANONYMOUS)
@require_safe
def replay_entry(request, stamp: str, url: str):
    """Send the browser on to pywb with a ticket, or say why not."""
    if request.META.get("QUERY_STRING"):
        url = f"{url}?{request.META['QUERY_STRING']}"  # the query string belongs to the archived URL
    timestamp, modifier = _STAMP.match(stamp).groups()
    user = request.user
    if not user.is_authenticated and not settings.ACCESS_ANONYMOUS:
        return redirect_to_login(request.get_full_path())
    if timestamp:
        try:
            datetime.strptime(timestamp.ljust(14, "0")[:14], "%Y%m%d%H%M%S")
        except ValueError:
            timestamp = ""  # not a date: the latest capture, as pywb does with a date it cannot read
    if "\x00" in url or len(url) > 8000:
        return _refusal(
            request,
            status=404,
            title=_("Not a URL"),
            message=_("“%(url)s” is not a URL that can be replayed.") % {"url": url[:2000]},
        )
    key = selectors.exact_key(url)
    viewer = access.viewer_of_request(request)
    if modifier == RAW_MODIFIER and not (viewer.profile in RAW_PROFILES and can(user, DOWNLOAD, WarcFile)):
        return _refusal(
            request,
            status=403,
            title=_("No downloads"),
            message=_("The archived bytes of a capture (id_) can only be downloaded by crawl engineers."),
            url=url,
        )
    captures = Capture.objects.filter(urlkey=key)
    if access.visible_captures(captures, viewer).exists():
        ticket = ticket_make(
            key=gate_ticket_key(),
            profile=viewer.profile,
            address=access.client_address(request.META),
            seconds=settings.REPLAY_TICKET_SECONDS,
        )
        target = pywb_url(viewer.profile, stamp, url)
        gate = settings.REPLAY_URL.rstrip("/") + "/_ticket?" + urlencode({"t": ticket, "next": target})
        response = HttpResponseRedirect(gate)
        response["Cache-Control"] = "no-store"
        return response
    capture = _closest(captures.select_related("job"), timestamp)
    decision = access.capture_decision(capture, viewer) if capture is not None else None
    # No capture, or a take-down, which hides the URL: for readers it is as if the archive had none.
    if decision is None or decision.exclusion is not None:
        return _refusal(
            request,
            status=404,
            title=_("Not in the archive"),
            message=_("The archive has no capture of %(url)s.") % {"url": url[:2000]},
            url=url,
        )
    if not user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    return _refusal(
        request,
        status=403,
        title=_("Not open to you here"),
        message=_("You are %(viewer)s; the captures of %(url)s are not open to you from here.")
        % {"viewer": viewer.describe(), "url": url[:2000]},
        decision=decision,
        url=url,
    )


urlpatterns = [
    re_path(rf"^replay/(?P<stamp>{STAMP})/(?P<url>.+)$", replay_entry, name="replay_entry"),
]
