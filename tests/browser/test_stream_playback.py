"""A stream crawled from the test website plays back from pywb's replay in Chromium.

The test website's ``/streams/playable/`` (:mod:`webarchive.testsite.playable`) is a real video: a
DASH stream of VP9 in WebM made by ffmpeg, and a page whose own few lines of script play it through
Media Source Extensions. A site crawl captures the page, the MPD and every segment; the website is
stopped and pywb serves the crawl's WARC files. Chromium opens the replayed page: its script fetches
the manifest and the segments through pywb, and the video decodes and plays to its end. Every
request the browser makes goes to pywb, so what plays can only come from the archive.
"""

from __future__ import annotations

import shutil
from urllib.parse import urlsplit

import pytest
import requests

from tests.components import require_component
from tests.crawler.sitecrawl import crawl
from tests.crawler.test_replay import BIN, free_port, start_pywb
from webarchive.testsite import TestSite, playable

pytestmark = pytest.mark.browser

PLAYBACK_TIMEOUT_MS = 30_000  # the page, manifest and segments through pywb, then two seconds of video
# A playback's promise, bounded (page.evaluate itself waits for a promise forever).
BOUNDED = """(promise, ms) => Promise.race([
  promise,
  new Promise((resolve, reject) => setTimeout(() => reject(new Error("no end of playback")), ms)),
])"""


@pytest.fixture(scope="module")
def replay(tmp_path_factory):
    """(pywb base URL, the page's URL, the crawl) of a crawl of /streams/playable/, the site stopped."""
    require_component(
        "ffmpeg", shutil.which("ffmpeg") is not None, "ffmpeg (Debian package) makes the playable stream"
    )
    require_component("pywb", (BIN / "wayback").exists(), "pywb (requirements-dev.txt) replays WARC files")
    root = tmp_path_factory.mktemp("pywb-playable")
    with TestSite(port=0) as site:
        page_url = site.url(playable.PATH)
        result = crawl(root / "crawl", [page_url], extract_sitemaps=False)
    port = free_port()
    server = start_pywb(root, [info.path for info in result.files], port)
    yield f"http://127.0.0.1:{port}/crawl", page_url, result
    server.terminate()
    server.wait(30)


@pytest.fixture
def replay_page(playwright_browser, replay):
    """A page in a fresh context, and the URLs it requests."""
    context = playwright_browser.new_context()
    context.set_default_timeout(PLAYBACK_TIMEOUT_MS)
    page = context.new_page()
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    yield page, requested
    context.close()


def replayed_frame(page, address: str):
    """The replayed page as a reader sees it: in pywb's frame, under its banner, its player started."""
    page.goto(address)
    frame = page.locator("#replay_iframe").element_handle().content_frame()
    frame.wait_for_function("window.playback !== undefined")
    return frame


def test_the_crawl_captures_the_page_the_manifest_and_every_segment(replay):
    base, page_url, result = replay
    media = playable.media()
    assert set(media) == {"manifest.mpd", "init.webm", "seg-1.webm", "seg-2.webm"}
    responses = result.responses()
    assert set(responses) == {page_url, page_url.replace(playable.PATH, "/robots.txt")} | {
        page_url + name for name in media
    }
    for name, body in media.items():
        assert responses[page_url + name]["body"] == body, name
        answer = requests.get(f"{base}/id_/{page_url}{name}", timeout=30, headers={"Connection": "close"})
        assert answer.status_code == 200, name
        assert answer.content == body, name
    assert result.line(page_url + "seg-2.webm")[4] == "EE"  # page → manifest → segment
    assert result.crawl.stop_reason == "completed"


def test_the_replayed_stream_plays_to_its_end_in_chromium(replay, replay_page):
    base, page_url, _result = replay
    page, requested = replay_page
    frame = replayed_frame(page, f"{base}/{page_url}")
    played = frame.evaluate(f"ms => ({BOUNDED})(window.playback, ms)", PLAYBACK_TIMEOUT_MS)
    # Every frame of the stream went through the decoder, not only downloaded.
    assert played["frames"] == playable.DURATION_SECONDS * playable.FRAMES_PER_SECOND
    assert played["duration"] == pytest.approx(playable.DURATION_SECONDS, abs=0.2)
    assert played["currentTime"] == pytest.approx(played["duration"], abs=0.2)
    replayed = {urlsplit(url).path.split("/http", 1)[-1] for url in requested}
    port = urlsplit(page_url).port
    assert {f"://127.0.0.1:{port}{playable.PATH}{name}" for name in playable.media()} <= replayed
    # Nothing but pywb: the video can only come from the archive.
    assert {urlsplit(url).netloc for url in requested if not url.startswith("blob:")} == {
        urlsplit(base).netloc
    }


def test_the_same_player_fails_on_a_stream_the_archive_does_not_hold(replay, replay_page):
    base, page_url, _result = replay
    page, _requested = replay_page
    frame = replayed_frame(page, f"{base}/{page_url}")
    failed = frame.evaluate(
        f"""ms => ({BOUNDED})(play(document.createElement("video"), "absent.mpd"), ms)
            .then(() => "played", (error) => String(error))""",
        PLAYBACK_TIMEOUT_MS,
    )
    assert failed == "Error: absent.mpd: HTTP 404"


def test_the_test_website_serves_the_stream_with_its_types_and_refuses_the_rest():
    require_component(
        "ffmpeg", shutil.which("ffmpeg") is not None, "ffmpeg (Debian package) makes the playable stream"
    )
    with TestSite(port=0) as site:
        page = requests.get(site.url(playable.PATH), timeout=10)
        manifest = requests.get(site.url(playable.PATH + "manifest.mpd"), timeout=10)
        segment = requests.get(site.url(playable.PATH + "seg-1.webm"), timeout=10)
        missing = requests.get(site.url(playable.PATH + "seg-9.webm"), timeout=10)
    assert "<source src='manifest.mpd' type='application/dash+xml'>" in page.text
    assert manifest.headers["Content-Type"] == "application/dash+xml"
    assert b'<SegmentURL media="seg-2.webm"' in manifest.content
    assert segment.headers["Content-Type"] == "video/webm"
    assert segment.content.startswith(b"\x1f\x43\xb6\x75")  # a WebM cluster
    assert missing.status_code == 404
