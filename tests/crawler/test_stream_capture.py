"""Streamed video captured whole by a site crawl and replayed by pywb.

The test website's ``/streams/`` page embeds an HLS stream (two variants, an audio rendition) and
two DASH streams (``SegmentTemplate`` with its segments on the CDN address, ``SegmentTimeline``);
``webarchive.testsite.streams.ground_truth`` lists what a crawl must capture, every variant or the
best one. The crawl's WARC files are then served by pywb (its own process, the website stopped):
every manifest and segment comes back byte for byte, and a player's walk through the replayed
manifests (master playlist → variant → segments, MPD → segments) finds every segment in the archive.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
import requests

from harvest.crawler.extractors.base import Resolver
from harvest.crawler.extractors.streams import dash_links, hls_links
from harvest.crawler.outcomes import OBJECT_LIMIT
from tests.components import require_component
from tests.crawler.sitecrawl import crawl
from tests.crawler.test_replay import BIN, free_port, start_pywb
from webarchive.testsite import Router, TestSite
from webarchive.testsite import streams as stream_site
from webarchive.testsite.server import Response, html_page


@pytest.fixture(scope="module")
def site():
    with TestSite(port=0, seed=2, hosts=2) as served:
        yield served


def prerequisites(site: TestSite) -> set[str]:
    return {site.host_url(0, "/robots.txt"), site.host_url(1, "/robots.txt")}


def test_every_variant_of_every_stream_is_captured_whole(site, tmp_path):
    result = crawl(tmp_path, [site.url("/streams/")], extract_sitemaps=False)
    truth = stream_site.ground_truth(site, variants="all")
    responses = result.responses()
    assert set(responses) == truth | prerequisites(site)
    files = stream_site.stream_files(site)
    for url in truth:
        assert responses[url]["status"] == 200, url
        assert responses[url]["body"] == files[url].body, url
    # the CDN's segments too (embeds of a manifest in scope), and a few of each kind
    assert any(urlsplit(url).hostname == "127.0.0.2" and url.endswith(".m4s") for url in truth)
    assert {url.rsplit(".", 1)[1] for url in truth} >= {"m3u8", "mpd", "ts", "m4s", "mp4"}
    assert result.line(site.url("/streams/hls/high/seg-2.m4s"))[4] == "EEE"  # page → master → variant
    assert result.crawl.stop_reason == "completed"


def test_best_variant_only_captures_the_best_variant_of_each_stream(site, tmp_path):
    result = crawl(tmp_path, [site.url("/streams/")], extract_sitemaps=False, stream_variants="best")
    best = stream_site.ground_truth(site, variants="best")
    assert set(result.responses()) == best | prerequisites(site)
    assert best < stream_site.ground_truth(site, variants="all")
    assert site.url("/streams/hls/low/index.m3u8") not in best
    assert site.url("/streams/dash/timeline/v720/4000.m4s") in best


def test_segments_count_against_the_site_budget(site, tmp_path):
    result = crawl(tmp_path, [site.url("/streams/")], extract_sitemaps=False, max_objects=12)
    assert result.crawl.stop_reason == OBJECT_LIMIT
    assert result.crawl.urls_done == 12
    assert len(result.responses()) == 12


@pytest.fixture(scope="module")
def replay(tmp_path_factory):
    """(pywb base URL, the stream files as served) of a crawl of /streams/, the website stopped."""
    require_component("pywb", (BIN / "wayback").exists(), "pywb (requirements-dev.txt) replays WARC files")
    root = tmp_path_factory.mktemp("pywb-streams")
    with TestSite(port=0, seed=3, hosts=2) as served:
        files = crawl(root / "crawl", [served.url("/streams/")], extract_sitemaps=False).files
        stream_files = stream_site.stream_files(served)
    port = free_port()
    server = start_pywb(root, [info.path for info in files], port)
    yield f"http://127.0.0.1:{port}/crawl", stream_files
    server.terminate()
    server.wait(30)


def get(url: str) -> requests.Response:
    # A connection per request, as in tests/crawler/test_replay.py.
    return requests.get(url, timeout=30, allow_redirects=False, headers={"Connection": "close"})


def test_every_manifest_and_segment_replays_byte_identical(replay):
    base, files = replay
    for url, file in files.items():
        answer = get(f"{base}/id_/{url}")
        assert answer.status_code == 200, url
        assert answer.content == file.body, url
        assert answer.headers["Content-Type"].split(";")[0] == file.content_type.split(";")[0], url


def test_a_player_walking_the_replayed_manifests_finds_every_segment_in_the_archive(replay):
    base, files = replay
    prefix = f"{base}/mp_/"  # where the replayed page's player asks (pywb's frame holds the page there)
    pending = [prefix + url for url in files if url.endswith((".mpd", "master.m3u8"))]
    assert len(pending) == 3
    reached: set[str] = set()
    while pending:
        address = pending.pop()
        original = address[len(prefix) :]
        reached.add(original)
        answer = get(address)
        assert answer.status_code == 200, original
        if original.endswith(".m3u8"):
            found = hls_links(answer.text, Resolver(address), variants="all", limit=1000)
        elif original.endswith(".mpd"):
            found = dash_links(answer.text, Resolver(address), variants="all", limit=1000)
        else:
            assert answer.content == files[original].body, original
            continue
        for link in found:
            # A URL the manifest gives absolute is sent to the archive by the page's client-side rewriting.
            target = link.url if link.url.startswith(prefix) else prefix + link.url
            if target[len(prefix) :] not in reached and target not in pending:
                pending.append(target)
    # pywb serves a player the best variant of each stream (its own choice): all of its segments are there.
    assert reached == {url for url, file in files.items() if file.best and not url.endswith("/streams/")}
    assert any(urlsplit(url).hostname == "127.0.0.2" for url in reached)  # the CDN's segments


def test_the_test_website_serves_its_streams_with_their_types_and_refuses_the_rest(site):
    files = stream_site.stream_files(site)
    for path, content_type in (
        ("/streams/hls/master.m3u8", "application/vnd.apple.mpegurl"),
        ("/streams/dash/template.mpd", "application/dash+xml"),
        ("/streams/hls/low/seg-0.ts", "video/mp2t"),
    ):
        answer = requests.get(site.url(path), timeout=10)
        assert answer.headers["Content-Type"] == content_type
        assert answer.content == files[site.url(path)].body
    assert requests.get(site.url("/streams/hls/low/seg-9.ts"), timeout=10).status_code == 404
    assert requests.get(site.host_url(1, "/streams/hls/master.m3u8"), timeout=10).status_code == 404
    with pytest.raises(ValueError, match="variants"):
        stream_site.ground_truth(site, variants="some")


def test_a_hostile_stream_is_read_to_the_caps_and_crawled_to_the_budget(tmp_path):
    # 8 MB of playlist (a quarter of a million segments) served as octet-stream, and an MPD of a
    # billion segments: both read within the caps, the crawl ends at its object limit.
    playlist = "#EXTM3U\n" + "".join(f"#EXTINF:1,\nseg-{n:07d}.ts\n" for n in range(250_000))
    huge = (
        '<MPD type="static" mediaPresentationDuration="P11574D"><Period><AdaptationSet>'
        '<SegmentTemplate duration="1" media="d/$Number$.m4s"/><Representation id="r"/>'
        "</AdaptationSet></Period></MPD>"
    )
    router = Router()
    router.add(
        "/", lambda request: html_page("Home", "<video src='live.m3u8'></video><video src='v.mpd'></video>")
    )
    router.add(
        "/live.m3u8",
        lambda request: Response(body=playlist.encode(), content_type="application/octet-stream"),
    )
    router.add("/v.mpd", lambda request: Response(body=huge.encode(), content_type="application/dash+xml"))
    router.add("/<path:rest>", lambda request: Response(body=b"x" * 100, content_type="video/mp2t"))
    with TestSite(port=0, router=router) as hostile:
        result = crawl(
            tmp_path,
            [hostile.url("/")],
            obey_robots=False,
            extract_sitemaps=False,
            extract_max_bytes=1024 * 1024,
            extract_max_links=1000,
            max_objects=60,
        )
    assert result.crawl.stop_reason == OBJECT_LIMIT
    playlist_line = result.line(hostile.url("/live.m3u8"))
    assert "links-read:1048576-bytes" in playlist_line[-1]  # the rest of the 8 MB stored, not read
    assert "links-skipped:" in result.line(hostile.url("/v.mpd"))[-1]
    assert result.crawl.report()["links_skipped"] >= 11574 * 86400 - 1000
    segments = [url for url in result.fetched if url.endswith((".ts", ".m4s"))]
    others = {hostile.url(path) for path in ("/", "/robots.txt", "/live.m3u8", "/v.mpd")}
    assert set(result.fetched) - set(segments) == others
    assert len(segments) == 60 - len(others)
