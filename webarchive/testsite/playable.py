"""A stream of the test website a browser really plays: ``/streams/playable/``.

The streams of :mod:`webarchive.testsite.streams` are byte payloads, not media. This one is a
2-second VP9 video (ffmpeg's ``testsrc`` pattern, 64x48, 10 frames a second) cut by ffmpeg's DASH
muxer into an MPD (a ``SegmentList``), a WebM initialization segment and two media segments,
generated once per process where ffmpeg is installed (elsewhere the section answers 404).

The page embeds the MPD in a ``<video>`` for crawlers, and plays it with a few lines of its own
script through Media Source Extensions (no player library): it fetches the manifest and every
segment, appends them to a ``SourceBuffer`` and plays the video to its end. ``window.playback`` is
the promise of that playback: the decoded frames, the time reached and the duration, or the
error. ``play(video, manifestUrl)`` plays another manifest the same way.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import tempfile
from pathlib import Path

from webarchive.testsite.server import Request, Response, Router, html_page, not_found

router = Router()

PATH = "/streams/playable/"
MANIFEST = "manifest.mpd"
DURATION_SECONDS = 2
FRAMES_PER_SECOND = 10
CONTENT_TYPES = {".mpd": "application/dash+xml", ".webm": "video/webm"}

PLAYER = """
async function play(video, manifestUrl) {
  const manifestAddress = new URL(manifestUrl, document.baseURI);
  const answer = await fetch(manifestAddress);
  if (!answer.ok) throw new Error(`${manifestUrl}: HTTP ${answer.status}`);
  const mpd = new DOMParser().parseFromString(await answer.text(), "application/xml");
  const representation = mpd.querySelector("Representation");
  if (!representation) throw new Error(`${manifestUrl}: not an MPD`);
  const codecs = representation.getAttribute("codecs");
  const type = `${representation.getAttribute("mimeType")}; codecs="${codecs}"`;
  const segments = [
    mpd.querySelector("Initialization").getAttribute("sourceURL"),
    ...Array.from(mpd.querySelectorAll("SegmentURL"), (segment) => segment.getAttribute("media")),
  ];
  const source = new MediaSource();
  video.src = URL.createObjectURL(source);
  await new Promise((resolve) => source.addEventListener("sourceopen", resolve, { once: true }));
  const buffer = source.addSourceBuffer(type);
  for (const segment of segments) {
    const part = await fetch(new URL(segment, manifestAddress));
    if (!part.ok) throw new Error(`${segment}: HTTP ${part.status}`);
    buffer.appendBuffer(await part.arrayBuffer());
    await new Promise((resolve, reject) => {
      buffer.onupdateend = resolve;
      buffer.onerror = () => reject(new Error(`${segment}: not decodable`));
    });
  }
  source.endOfStream();
  const ended = new Promise((resolve, reject) => {
    video.onended = resolve;
    video.onerror = () => reject(new Error(`media error ${video.error.code}: ${video.error.message}`));
  });
  await video.play();
  await ended;
  return {
    frames: video.getVideoPlaybackQuality().totalVideoFrames,
    currentTime: video.currentTime,
    duration: video.duration,
  };
}
window.play = play;  // a replay (pywb) wraps the script in a block: a declaration alone stays in it
window.playback = play(document.querySelector("video"), "manifest.mpd");
"""


@functools.cache
def media() -> dict[str, bytes]:
    """The stream's files by name (the MPD and its segments), made by ffmpeg once per process."""
    ffmpeg = shutil.which("ffmpeg")
    if ffmpeg is None:
        return {}
    with tempfile.TemporaryDirectory(prefix="testsite-playable-") as directory:
        source = f"testsrc=size=64x48:rate={FRAMES_PER_SECOND}:duration={DURATION_SECONDS}"
        command = [ffmpeg, "-nostdin", "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", source]
        # A key frame every second, so that each one-second segment starts with one.
        command += ["-c:v", "libvpx-vp9", "-b:v", "50k", "-g", str(FRAMES_PER_SECOND), "-pix_fmt", "yuv420p"]
        command += ["-deadline", "realtime", "-cpu-used", "8", "-threads", "1", "-f", "dash"]
        command += ["-seg_duration", "1", "-use_template", "0", "-use_timeline", "0"]
        command += ["-dash_segment_type", "webm", "-init_seg_name", "init.webm"]
        command += ["-media_seg_name", "seg-$Number$.webm", MANIFEST]
        subprocess.run(  # noqa: S603 (ffmpeg, with arguments we built)
            command, cwd=directory, check=True, capture_output=True, timeout=120
        )
        return {path.name: path.read_bytes() for path in sorted(Path(directory).iterdir())}


def page() -> Response:
    body = (
        "<p>A two-second video in DASH (VP9 in WebM), played by this page's own script.</p>\n"
        f"<video muted><source src='{MANIFEST}' type='application/dash+xml'></video>\n"
        f"<script>{PLAYER}</script>\n"
    )
    return html_page("Playable stream", body)


def serve(request: Request) -> Response:
    """The page, the MPD or a segment; 404 for anything else, and for everything without ffmpeg."""
    files = media()
    if not files:
        return not_found("ffmpeg is not installed: there is no playable stream.")
    name = request.params.get("name")
    if name is None:
        return page()
    body = files.get(name)
    if body is None:
        return not_found()
    return Response(body=body, content_type=CONTENT_TYPES[Path(name).suffix])


router.add(PATH, serve, title="Streamed video a browser plays (DASH, VP9), with its own player")
router.add(PATH + "<name>", serve)
