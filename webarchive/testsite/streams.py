"""Streamed video on the test website: one HLS stream and two DASH streams, tiny and deterministic.

``/streams/`` embeds them: ``hls/master.m3u8`` (two variants and an audio rendition, segments in
MPEG-TS for one variant and fragmented MP4 with an ``EXT-X-MAP`` for the other),
``dash/template.mpd`` (``SegmentTemplate`` with ``$Number$``, its segments on the CDN address
when the site has one) and ``dash/timeline.mpd`` (``SegmentTimeline`` with ``$Time$``). The
segments are small byte payloads with the right content type, not playable media.

:func:`stream_files` is what the server answers and :func:`ground_truth` the URLs a crawl of
``/streams/`` must capture, every variant or only the best one: both come from the same lists.
"""

from __future__ import annotations

import hashlib
import html
from dataclasses import dataclass
from typing import TYPE_CHECKING

from webarchive.testsite.server import Request, Response, Router, html_page, not_found

if TYPE_CHECKING:
    from webarchive.testsite.server import TestSite

router = Router()
cdn_router = Router()  # 127.0.0.2

HLS = "application/vnd.apple.mpegurl"
DASH = "application/dash+xml"
SEGMENTS = 3  # per variant
# HLS variants: (name, BANDWIDTH, segment format)
HLS_VARIANTS = (("low", 200_000, "ts"), ("high", 800_000, "fmp4"))
# DASH Representations of the video AdaptationSet: (id, bandwidth); the audio one has one.
DASH_VIDEO = (("v360", 300_000), ("v720", 1_200_000))
DASH_AUDIO = (("a128", 128_000),)


@dataclass(frozen=True)
class StreamFile:
    content_type: str
    body: bytes
    best: bool  # fetched when only the best variant is


def _payload(name: str, size: int = 1500) -> bytes:
    """A segment's bytes: the same for the same name, different for every other."""
    seed = hashlib.sha256(name.encode()).digest()
    return (seed * (size // len(seed) + 1))[:size]


def _cdn_base(site: TestSite) -> str:
    return site.host_url(1, "/streams/") if site.hosts >= 2 else site.url("/streams/cdn/")


def stream_files(site: TestSite) -> dict[str, StreamFile]:
    """Every file of the streams section, by absolute URL (the page included)."""
    files: dict[str, StreamFile] = {}
    base = site.url("/streams/")

    def add(url: str, content_type: str, body: bytes, best: bool) -> None:
        files[url] = StreamFile(content_type, body, best)

    # HLS: a master playlist, an audio rendition, two variants.
    master = ["#EXTM3U", "#EXT-X-VERSION:7"]
    master.append('#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",NAME="English",DEFAULT=YES,URI="audio/index.m3u8"')
    for name, bandwidth, _format in HLS_VARIANTS:
        audio = ',AUDIO="aud"' if name == "high" else ""
        master += [
            f'#EXT-X-STREAM-INF:BANDWIDTH={bandwidth},CODECS="avc1.42e01e"{audio}',
            f"{name}/index.m3u8",
        ]
    add(base + "hls/master.m3u8", HLS, ("\n".join(master) + "\n").encode(), True)
    best_hls = max(HLS_VARIANTS, key=lambda variant: variant[1])[0]
    for name, _bandwidth, form in [*HLS_VARIANTS, ("audio", 0, "fmp4")]:
        best = name in (best_hls, "audio")  # the best variant and the audio of its group
        lines = ["#EXTM3U", "#EXT-X-VERSION:7", "#EXT-X-TARGETDURATION:2", "#EXT-X-PLAYLIST-TYPE:VOD"]
        directory = f"{base}hls/{name}/"
        if form == "fmp4":
            lines.append('#EXT-X-MAP:URI="init.mp4"')
            add(directory + "init.mp4", "video/mp4", _payload(directory + "init.mp4", 600), best)
        extension, content_type = ("ts", "video/mp2t") if form == "ts" else ("m4s", "video/iso.segment")
        for number in range(SEGMENTS):
            lines += ["#EXTINF:2.0,", f"seg-{number}.{extension}"]
            url = f"{directory}seg-{number}.{extension}"
            add(url, content_type, _payload(url), best)
        lines.append("#EXT-X-ENDLIST")
        add(directory + "index.m3u8", HLS, ("\n".join(lines) + "\n").encode(), best)

    # DASH with SegmentTemplate and $Number$: its segments on the CDN.
    cdn = _cdn_base(site) + "dash/"
    sets = []
    for kind, representations in (("video/mp4", DASH_VIDEO), ("audio/mp4", DASH_AUDIO)):
        best_id = max(representations, key=lambda representation: representation[1])[0]
        items = "".join(
            f'<Representation id="{rid}" bandwidth="{bandwidth}" codecs="avc1.42e01e"/>'
            for rid, bandwidth in representations
        )
        sets.append(
            f'<AdaptationSet mimeType="{kind}" segmentAlignment="true">'
            '<SegmentTemplate timescale="1000" duration="2000" startNumber="1" '
            'initialization="$RepresentationID$/init.mp4" media="$RepresentationID$/seg-$Number%03d$.m4s"/>'
            f"{items}</AdaptationSet>"
        )
        for rid, _bandwidth in representations:
            best = rid == best_id
            add(f"{cdn}{rid}/init.mp4", kind, _payload(f"{cdn}{rid}/init.mp4", 600), best)
            for number in range(1, SEGMENTS + 1):
                url = f"{cdn}{rid}/seg-{number:03d}.m4s"
                add(url, "video/iso.segment", _payload(url), best)
    add(base + "dash/template.mpd", DASH, _mpd(f"<BaseURL>{html.escape(cdn)}</BaseURL>", "".join(sets)), True)

    # DASH with a SegmentTimeline and $Time$ (two segments of 2 s, one of 1 s), on the site.
    times = (0, 2000, 4000)
    items = ""
    for rid, bandwidth in DASH_VIDEO:
        items += f'<Representation id="{rid}" bandwidth="{bandwidth}" codecs="avc1.42e01e"/>'
        best = bandwidth == max(value for _rid, value in DASH_VIDEO)
        add(f"{base}dash/timeline/{rid}/init.mp4", "video/mp4", _payload(f"timeline {rid} init", 600), best)
        for start in times:
            url = f"{base}dash/timeline/{rid}/{start}.m4s"
            add(url, "video/iso.segment", _payload(url), best)
    timeline = (
        '<AdaptationSet mimeType="video/mp4"><SegmentTemplate timescale="1000" '
        'initialization="timeline/$RepresentationID$/init.mp4" '
        'media="timeline/$RepresentationID$/$Time$.m4s">'
        '<SegmentTimeline><S t="0" d="2000" r="1"/><S d="1000"/></SegmentTimeline></SegmentTemplate>'
        f"{items}</AdaptationSet>"
    )
    add(base + "dash/timeline.mpd", DASH, _mpd("", timeline, duration="PT5S"), True)

    page = (
        "<p>Streamed video: HLS and DASH.</p>\n"
        "<video controls src='hls/master.m3u8'></video>\n"
        "<video controls><source src='dash/template.mpd' type='application/dash+xml'></video>\n"
        "<video controls><source src='dash/timeline.mpd' type='application/dash+xml'></video>\n"
    )
    add(base, "text/html; charset=utf-8", html_page("Streams", page).body, True)
    return files


def _mpd(base: str, sets: str, duration: str = "PT6S") -> bytes:
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" '
        'profiles="urn:mpeg:dash:profile:isoff-live:2011" '
        f'mediaPresentationDuration="{duration}" minBufferTime="PT2S">'
        f'{base}<Period id="1">{sets}</Period></MPD>\n'
    ).encode()


def ground_truth(site: TestSite, *, variants: str = "all") -> set[str]:
    """The URLs a crawl of ``/streams/`` captures: the page, manifests and segments of every variant
    (``"all"``) or of the best one (``"best"``)."""
    if variants not in ("all", "best"):
        raise ValueError('variants must be "all" or "best"')
    return {url for url, file in stream_files(site).items() if variants == "all" or file.best}


def serve(request: Request) -> Response:
    """The file of the streams section at this address and path, or 404."""
    site = request.site
    url = site.host_url(request.host_index, request.path)
    found = stream_files(site).get(url)
    if found is None:
        return not_found()
    return Response(body=found.body, content_type=found.content_type)


router.add("/streams/", serve, title="Streamed video: an HLS stream and two DASH streams (tiny segments)")
router.add("/streams/<path:rest>", serve)
cdn_router.add("/streams/<path:rest>", serve)
