"""Streamed audio and video: HLS playlists and DASH manifests (harvest.crawler.extractors.streams),
hostile ones included."""

from __future__ import annotations

import pytest

from harvest.crawler.extractors import Document, ExtractOptions, extract
from harvest.crawler.extractors.base import Resolver
from harvest.crawler.extractors.streams import (
    MAX_LIVE_SEGMENTS,
    StreamExtractor,
    dash_links,
    parse_duration,
    parse_mpd,
)

HLS = "application/vnd.apple.mpegurl"
DASH = "application/dash+xml"
ALL = ExtractOptions(stream_variants="all")
BEST = ExtractOptions(stream_variants="best")


def links(body: str | bytes, content_type: str, url: str, options: ExtractOptions = ALL):
    if isinstance(body, str):
        body = body.encode()
    document = Document(url=url, status=200, headers=[], content_type=content_type, charset=None, body=body)
    return extract(document, options)


def found(body, content_type=HLS, url="http://example.com/video/master.m3u8", options=ALL):
    """[(url, hop, context)] of a manifest's links, in order."""
    return [(link.url, link.hop, link.context) for link in links(body, content_type, url, options).links]


def urls(body, content_type=HLS, url="http://example.com/video/master.m3u8", options=ALL):
    return [link[0] for link in found(body, content_type, url, options)]


MASTER = """#EXTM3U
#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",NAME="en",URI="audio/en.m3u8"
#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="other",NAME="fr",URI="audio/fr.m3u8"
#EXT-X-MEDIA:TYPE=CLOSED-CAPTIONS,GROUP-ID="cc",NAME="cc",INSTREAM-ID="CC1"
#EXT-X-STREAM-INF:BANDWIDTH=200000,RESOLUTION=320x180
low/index.m3u8
#EXT-X-STREAM-INF:BANDWIDTH=1800000,AUDIO="aud",CODECS="avc1.4d401f,mp4a.40.2"
https://cdn.example.net/high/index.m3u8?token=1
#EXT-X-STREAM-INF:BANDWIDTH=800000
mid/index.m3u8
#EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=50000,URI="iframes.m3u8"
"""


def test_a_master_playlist_gives_every_variant_rendition_and_i_frame_playlist():
    assert found(MASTER) == [
        ("http://example.com/video/low/index.m3u8", "E", "hls/variant"),
        ("https://cdn.example.net/high/index.m3u8?token=1", "E", "hls/variant"),
        ("http://example.com/video/mid/index.m3u8", "E", "hls/variant"),
        ("http://example.com/video/audio/en.m3u8", "E", "hls/media"),
        ("http://example.com/video/audio/fr.m3u8", "E", "hls/media"),
        ("http://example.com/video/iframes.m3u8", "E", "hls/i-frames"),
    ]


def test_best_variant_only_is_the_highest_bandwidth_with_the_renditions_of_its_groups():
    assert urls(MASTER, options=BEST) == [
        "https://cdn.example.net/high/index.m3u8?token=1",
        "http://example.com/video/audio/en.m3u8",
    ]


def test_a_media_playlist_gives_its_segments_init_segment_and_key():
    playlist = """#EXTM3U
#EXT-X-TARGETDURATION:4
#EXT-X-KEY:METHOD=AES-128,URI="https://keys.example.com/k1",IV=0x1234
#EXT-X-MAP:URI="init.mp4",BYTERANGE="600@0"
#EXTINF:4.0,
seg-0.m4s
#EXTINF:4.0,
/absolute/seg-1.m4s
#EXT-X-KEY:METHOD=NONE
#EXTINF:4.0,
http://other.example.org/seg-2.m4s
#EXT-X-ENDLIST
"""
    assert found(playlist, url="http://example.com/v/low/index.m3u8", options=BEST) == [
        ("https://keys.example.com/k1", "E", "hls/key"),
        ("http://example.com/v/low/init.mp4", "E", "hls/map"),
        ("http://example.com/v/low/seg-0.m4s", "E", "hls/segment"),
        ("http://example.com/absolute/seg-1.m4s", "E", "hls/segment"),
        ("http://other.example.org/seg-2.m4s", "E", "hls/segment"),
    ]


@pytest.mark.parametrize(
    ("content_type", "url", "read"),
    [
        ("application/x-mpegURL".lower(), "http://e.com/a", True),
        ("audio/mpegurl", "http://e.com/list", True),
        ("application/octet-stream", "http://e.com/a/index.m3u8?x=1", True),
        ("text/plain", "http://e.com/a/index.M3U8", True),
        ("application/octet-stream", "http://e.com/a/index.bin", False),
        ("video/mp2t", "http://e.com/a/seg.m3u8", False),  # a segment, whatever its name
    ],
)
def test_a_playlist_is_known_by_its_type_or_by_its_name_when_the_type_is_vague(content_type, url, read):
    assert bool(urls("#EXTM3U\n#EXTINF:1,\nseg.ts\n", content_type, url)) is read


def test_hostile_playlists_non_http_uris_long_lines_and_thousands_of_segments():
    hostile = "\n".join(
        [
            "#EXTM3U",
            "javascript:alert(1)",
            "file:///etc/passwd",
            "data:video/mp2t;base64,AAAA",
            '#EXT-X-MAP:URI="ftp://example.com/init.mp4"',
            "x" * 20_000 + ".ts",
            "#EXT-X-STREAM-INF:BANDWIDTH=not-a-number",
            "ok.ts",
        ]
        + [f"seg-{n}.ts" for n in range(100_000)]
    )
    options = ExtractOptions(max_links=1000)
    extraction = links(hostile, HLS, "http://example.com/v/index.m3u8", options)
    assert len(extraction.links) == 1000
    # every segment beyond the cap counted, none kept (and ok.ts: a variant, after the segments)
    assert extraction.skipped == 100_000 + 1 - 1000
    assert all(link.url.startswith("http://example.com/v/") for link in extraction.links)
    assert extraction.links[0].url == "http://example.com/v/seg-0.ts"  # the non-http ones dropped


# --- DASH ------------------------------------------------------------------------------------------------

MPD_URL = "http://example.com/dash/stream.mpd"


def mpd(body: str, *, attributes: str = 'type="static" mediaPresentationDuration="PT6S"') -> str:
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" {attributes}>{body}</MPD>'
    )


TEMPLATE = mpd(
    "<BaseURL>https://cdn.example.net/s/</BaseURL><Period>"
    '<AdaptationSet mimeType="video/mp4">'
    '<SegmentTemplate timescale="1000" duration="2000" startNumber="5" '
    'initialization="$RepresentationID$/init.mp4" media="$RepresentationID$/$Number%04d$-$Bandwidth$.m4s"/>'
    '<Representation id="v1" bandwidth="100"/><Representation id="v2" bandwidth="300"/>'
    '<Representation id="v3" bandwidth="200"/>'
    "</AdaptationSet>"
    '<AdaptationSet mimeType="audio/mp4"><Representation id="a1" bandwidth="64">'
    '<BaseURL>audio/</BaseURL><SegmentList><Initialization sourceURL="init.mp4"/>'
    '<SegmentURL media="one.m4s"/><SegmentURL media="two.m4s"/></SegmentList>'
    "</Representation></AdaptationSet></Period>"
)


def test_a_segment_template_with_number_gives_each_segment_of_each_representation():
    assert urls(TEMPLATE, DASH, MPD_URL) == [
        *[
            url
            for rid, bandwidth in (("v1", 100), ("v2", 300), ("v3", 200))
            for url in [f"https://cdn.example.net/s/{rid}/init.mp4"]
            + [f"https://cdn.example.net/s/{rid}/{n:04d}-{bandwidth}.m4s" for n in (5, 6, 7)]
        ],
        "https://cdn.example.net/s/audio/init.mp4",
        "https://cdn.example.net/s/audio/one.m4s",
        "https://cdn.example.net/s/audio/two.m4s",
    ]


def test_best_variant_only_keeps_the_highest_bandwidth_of_each_adaptation_set():
    assert urls(TEMPLATE, DASH, MPD_URL, BEST) == [
        "https://cdn.example.net/s/v2/init.mp4",
        "https://cdn.example.net/s/v2/0005-300.m4s",
        "https://cdn.example.net/s/v2/0006-300.m4s",
        "https://cdn.example.net/s/v2/0007-300.m4s",
        "https://cdn.example.net/s/audio/init.mp4",
        "https://cdn.example.net/s/audio/one.m4s",
        "https://cdn.example.net/s/audio/two.m4s",
    ]


def test_a_segment_timeline_gives_the_times_and_numbers_of_its_segments():
    body = mpd(
        '<Period duration="PT10S"><AdaptationSet>'
        '<SegmentTemplate timescale="90000" media="t/$RepresentationID$/$Time$-$Number$.m4s" '
        'initialization="t/init-$RepresentationID$.mp4">'
        '<SegmentTimeline><S t="9000" d="180000" r="1"/><S d="90000"/><S t="900000" d="90000" r="-1"/>'
        "</SegmentTimeline></SegmentTemplate>"
        '<Representation id="v"/></AdaptationSet></Period>',
        attributes='type="static"',
    )
    assert urls(body, DASH, MPD_URL) == [
        "http://example.com/dash/t/init-v.mp4",
        "http://example.com/dash/t/v/9000-1.m4s",
        "http://example.com/dash/t/v/189000-2.m4s",
        "http://example.com/dash/t/v/369000-3.m4s",
        # r="-1": up to the end of the 10 s period
        "http://example.com/dash/t/v/900000-4.m4s",
    ]


def test_segment_base_gives_the_representation_file_itself():
    body = mpd(
        '<Period><AdaptationSet><Representation id="r" bandwidth="1"><BaseURL>video.mp4</BaseURL>'
        '<SegmentBase indexRange="0-99"><Initialization sourceURL="video-init.mp4"/></SegmentBase>'
        "</Representation></AdaptationSet></Period>"
    )
    assert urls(body, DASH, MPD_URL) == [
        "http://example.com/dash/video-init.mp4",
        "http://example.com/dash/video.mp4",
    ]


def test_a_live_mpd_gives_only_the_segments_of_its_window():
    body = mpd(
        '<Period start="PT0S"><AdaptationSet>'
        '<SegmentTemplate duration="2" media="live/$Number$.m4s"/>'
        '<Representation id="r"/></AdaptationSet></Period>',
        attributes='type="dynamic" availabilityStartTime="2026-01-01T00:00:00Z" timeShiftBufferDepth="PT10S"',
    )
    document = Document(MPD_URL, 200, [], DASH, None, body.encode())
    # A year after it started: 5 segments of 2 s in the 10 s window, the last complete ones.
    started = 1767225600.0
    found_links = dash_links(body, Resolver(MPD_URL), variants="all", limit=100, now=started + 86400 * 365)
    numbers = [int(link.url.rsplit("/", 1)[1].split(".")[0]) for link in found_links]
    assert numbers == list(range(15768000 - 4, 15768000 + 1))
    assert StreamExtractor().accepts(document)


def test_a_live_timeline_without_end_is_bounded():
    body = mpd(
        '<Period><AdaptationSet><SegmentTemplate media="$Time$.m4s"><SegmentTimeline>'
        '<S t="0" d="1" r="999999999"/><S d="1" r="-1"/></SegmentTimeline></SegmentTemplate>'
        '<Representation id="r"/></AdaptationSet></Period>',
        attributes='type="dynamic"',
    )
    assert len(urls(body, DASH, MPD_URL)) == MAX_LIVE_SEGMENTS


def test_a_static_mpd_of_a_billion_segments_gives_the_cap_and_counts_the_rest_without_computing_them():
    body = mpd(
        '<Period><AdaptationSet><SegmentTemplate duration="1" media="$Number$.m4s"/>'
        '<Representation id="r"/></AdaptationSet></Period>',
        attributes='type="static" mediaPresentationDuration="P11574D"',  # a billion seconds
    )
    extraction = links(body, DASH, MPD_URL, ExtractOptions(max_links=500))
    assert len(extraction.links) == 500
    assert extraction.skipped == 11574 * 86400 - 500


def test_billion_laughs_and_external_entities_are_refused():
    laughs = (
        '<?xml version="1.0"?><!DOCTYPE MPD [<!ENTITY a "aaaaaaaaaa">'
        + "".join(f'<!ENTITY {chr(98 + n)} "{("&" + chr(97 + n) + ";") * 10}">' for n in range(8))
        + ']><MPD><Period><AdaptationSet><Representation id="&i;"><BaseURL>&i;.mp4</BaseURL>'
        "</Representation></AdaptationSet></Period></MPD>"
    )
    external = (
        '<?xml version="1.0"?><!DOCTYPE MPD [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
        "<MPD><BaseURL>&x;</BaseURL></MPD>"
    )
    for body in (laughs, external):
        with pytest.raises(ValueError):
            parse_mpd(body)
        assert urls(body, DASH, MPD_URL) == []  # the extractor gives nothing, and does not raise


def test_deeply_nested_and_malformed_mpds_are_refused():
    deep = "<MPD>" + "<Period>" * 10_000 + "</Period>" * 10_000 + "</MPD>"
    with pytest.raises(ValueError):
        parse_mpd(deep)
    assert urls(deep, DASH, MPD_URL) == []
    assert urls(mpd("<Period><AdaptationSet>"), DASH, MPD_URL) == []  # truncated
    assert urls("<html><body>not an MPD</body></html>", DASH, MPD_URL) == []


def test_non_http_base_urls_and_media_are_dropped():
    body = mpd(
        '<Period><AdaptationSet><Representation id="r">'
        '<SegmentList><Initialization sourceURL="javascript:alert(1)"/>'
        '<SegmentURL media="file:///etc/passwd"/><SegmentURL media="ok.m4s"/></SegmentList>'
        "</Representation></AdaptationSet></Period>"
        '<Period><BaseURL>ftp://example.com/</BaseURL><AdaptationSet><Representation id="s">'
        '<SegmentList><SegmentURL media="p2.m4s"/></SegmentList></Representation></AdaptationSet></Period>'
    )
    assert urls(body, DASH, MPD_URL) == [
        "http://example.com/dash/ok.m4s",
        "http://example.com/dash/p2.m4s",  # the ftp BaseURL ignored: resolved against the MPD's own
    ]


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("PT6S", 6.0), ("PT1H2M3.5S", 3723.5), ("P1DT1S", 86401.0), ("PT0S", 0.0), ("", None), ("6", None)],
)
def test_iso_durations(value, seconds):
    assert parse_duration(value) == seconds


def test_a_master_playlist_of_a_million_variants_keeps_only_the_cap_in_memory():
    lines = ["#EXTM3U"]
    for n in range(200_000):
        lines += [
            f"#EXT-X-STREAM-INF:BANDWIDTH={n}",
            f"v{n}.m3u8",
            f'#EXT-X-MEDIA:TYPE=AUDIO,URI="a{n}.m3u8"',
        ]
    extraction = links("\n".join(lines), HLS, "http://example.com/m.m3u8", ExtractOptions(max_links=100))
    assert len(extraction.links) == 100
    assert extraction.skipped == 400_000 - 100
    best = links(
        "\n".join(lines),
        HLS,
        "http://example.com/m.m3u8",
        ExtractOptions(max_links=100, stream_variants="best"),
    )
    # the best of those it kept (the first 50 variants): what a cap allows, never more
    assert [link.url for link in best.links] == ["http://example.com/v49.m3u8"]
