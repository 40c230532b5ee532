"""``POST /api/cdx/``: CDXJ or CDX lines of files written by crawlers outside the archive
(storage.services.outside_index; the OutbackCDX role). Crawl engineers and accounts given the
permission to add captures; the answer says what was written, or lists every bad line."""

from django.conf import settings
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import BaseParser
from rest_framework.response import Response
from rest_framework.views import APIView

from storage.models import Capture
from storage.services.outside_index import ERRORS_SHOWN, CaptureLinesRefused, capture_lines_add
from webarchive.permissions import Area


class LinesParser(BaseParser):
    """Any body: the view reads the lines itself, bounded (never parsed into ``request.data``)."""

    media_type = "*/*"

    def parse(self, stream, media_type=None, parser_context=None):
        return None


class CdxLinesAddedSerializer(serializers.Serializer):
    written = serializers.IntegerField(help_text=_("Captures added to the index."))
    unchanged = serializers.IntegerField(help_text=_("Lines already in the index, left as they were."))


class CdxLineErrorSerializer(serializers.Serializer):
    line = serializers.IntegerField(help_text=_("The line's number in the body, from 1."))
    error = serializers.CharField()


class CdxLinesRefusedSerializer(serializers.Serializer):
    detail = serializers.CharField()
    errors = CdxLineErrorSerializer(many=True)
    errors_count = serializers.IntegerField(help_text=_("Bad lines in all (only the first ones are listed)."))


class CaptureLinesView(APIView):
    """Add CDXJ or CDX11 lines of registered WARC files to the capture index: all of them or none."""

    area = Area.OPERATIONS
    queryset = Capture.objects.all()  # POST needs the permission to add captures
    http_method_names = ["post", "options"]
    parser_classes = [LinesParser]

    @extend_schema(
        request={"text/plain": str},
        responses={200: CdxLinesAddedSerializer, 400: CdxLinesRefusedSerializer},
        examples=[
            OpenApiExample(
                "CDXJ",
                value='com,example)/ 20240102030405 {"url": "http://example.com/", "mime": "text/html", '
                '"status": "200", "digest": "sha1:…", "length": "335", "offset": "0", '
                '"filename": "outside.warc.gz"}',
                request_only=True,
            )
        ],
    )
    def post(self, request):
        raw = request._request
        limit = settings.CDX_WRITE_MAX_BYTES
        if int(raw.META.get("CONTENT_LENGTH") or 0) > limit:
            return self._refused(CaptureLinesRefused(_too_large(limit)))
        # Read here, at most one byte past the limit (a body without a length is bounded too).
        body = raw.body if hasattr(raw, "_body") else raw.read(limit + 1)
        try:
            added = capture_lines_add(body=body)
        except CaptureLinesRefused as refusal:
            return self._refused(refusal)
        return Response(CdxLinesAddedSerializer(added).data)

    def _refused(self, refusal: CaptureLinesRefused) -> Response:
        errors = [{"line": error.line, "error": error.error} for error in refusal.errors[:ERRORS_SHOWN]]
        body = {"detail": refusal.reason, "errors": errors, "errors_count": len(refusal.errors)}
        return Response(body, status=status.HTTP_400_BAD_REQUEST)


def _too_large(limit: int) -> str:
    return str(
        _("The body has more than %(limit)d bytes: send the lines in smaller parts.") % {"limit": limit}
    )
