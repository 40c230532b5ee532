"""The replay gate's reports of URLs pywb did not find (a machine endpoint, signed with the gate's key)."""

import hmac
import json

from django.contrib.auth.decorators import login_not_required
from django.http import HttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from storage.replay import gate_ticket_key
from storage.replay_ticket import miss_signature
from storage.services.replay_misses import replay_miss_record

REPORT_MAX_BYTES = 16_384
SIGNATURE_HEADER = "HTTP_X_REPLAY_SIGNATURE"


@login_not_required  # the gate signs its reports with its key; it has no session
@csrf_exempt
@require_POST
def replay_misses(request):
    """POST from the replay gate: one URL pywb answered 404 to, with the page that asked for it."""
    body = request.body[: REPORT_MAX_BYTES + 1]
    if len(body) > REPORT_MAX_BYTES:
        return HttpResponse("Too large.\n", status=413, content_type="text/plain")
    expected = miss_signature(gate_ticket_key(), body)
    if not hmac.compare_digest(request.META.get(SIGNATURE_HEADER, ""), expected):
        return HttpResponse("Not signed by the replay gate.\n", status=403, content_type="text/plain")
    try:
        report = json.loads(body)
        fields = {
            name: str(report.get(name) or "")
            for name in ("url", "stamp", "modifier", "referer", "destination")
        }
    except (ValueError, AttributeError):
        return HttpResponse("Not a report.\n", status=400, content_type="text/plain")
    replay_miss_record(**fields)
    return HttpResponse(status=204)
