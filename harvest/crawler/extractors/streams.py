"""Streamed audio and video (E): HLS playlists (``.m3u8``) and DASH manifests (``.mpd``).

HLS: a master playlist names its variants (``EXT-X-STREAM-INF``, ``EXT-X-I-FRAME-STREAM-INF``)
and alternative renditions (``EXT-X-MEDIA``: audio, subtitles); a media playlist names its
segments, its init segments (``EXT-X-MAP``) and keys (``EXT-X-KEY``). DASH: every Representation
of every AdaptationSet of every Period, its segments computed from a ``SegmentTemplate``
(``$Number$`` with ``@duration``, or a ``SegmentTimeline``), listed by a ``SegmentList``, or its
``BaseURL`` itself (one file read by byte ranges); ``BaseURL`` elements nest from the MPD down.

``options.stream_variants`` is ``"all"`` (every variant) or ``"best"``: the variant of highest
``BANDWIDTH`` (with the renditions of its groups) in HLS, the Representation of highest
``@bandwidth`` of each AdaptationSet in DASH (one video, one audio…). Everything found is an
embed: fetched even from another host (a CDN), counted against the site's budget.

Crawled manifests are hostile: the body read is capped as any document's, the links are at most
``options.max_links`` (the others counted, never computed one by one), the XML of an MPD is parsed
without any DTD (no entities: no billion laughs), at most ``MAX_XML_DEPTH`` elements deep and
``MAX_XML_ELEMENTS`` in all, and a live (dynamic) MPD gives at most ``MAX_LIVE_SEGMENTS`` segments
per Representation, those of its last ``timeShiftBufferDepth``.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Iterable, Iterator
from datetime import datetime
from xml.etree.ElementTree import Element, TreeBuilder

from defusedxml.ElementTree import DefusedXMLParser

from .base import EMBED, Document, ExtractOptions, Link, LinkList, Resolver, decode, sniff_xml_charset

VARIANTS_ALL = "all"
VARIANTS_BEST = "best"
STREAM_VARIANTS = (VARIANTS_ALL, VARIANTS_BEST)

HLS_TYPES = frozenset(
    {
        "application/vnd.apple.mpegurl", "application/x-mpegurl", "application/mpegurl",
        "audio/mpegurl", "audio/x-mpegurl",
    }
)  # fmt: skip
DASH_TYPES = frozenset({"application/dash+xml"})
MANIFEST_TYPES = HLS_TYPES | DASH_TYPES
# Types a server may send a manifest with; then its name says what it is.
_VAGUE_TYPES = frozenset(
    {"", "text/plain", "application/octet-stream", "binary/octet-stream", "application/xml", "text/xml"}
)
HLS_SUFFIXES = (".m3u8", ".m3u")
DASH_SUFFIXES = (".mpd",)

MAX_LINE = 16384  # characters of a playlist line; longer ones are skipped
MAX_XML_DEPTH = 32  # an MPD is 6 levels deep (MPD, Period, AdaptationSet, Representation, …)
MAX_XML_ELEMENTS = 200_000
MAX_LIVE_SEGMENTS = 100  # per Representation of a dynamic MPD
LIVE_WINDOW = 60.0  # seconds of a dynamic MPD without timeShiftBufferDepth
MAX_NUMBER_WIDTH = 20  # digits of a "$Number%0Nd$" format

_ATTRIBUTE = re.compile(r'([A-Z0-9-]{1,64})=("[^"\r\n]{0,8192}"|[^",\s]{0,1024})')
_DURATION = re.compile(
    r"^\s*P(?:(\d{1,9}(?:\.\d{1,9})?)D)?"
    r"(?:T(?:(\d{1,9}(?:\.\d{1,9})?)H)?(?:(\d{1,9}(?:\.\d{1,9})?)M)?(?:(\d{1,12}(?:\.\d{1,9})?)S)?)?\s*$"
)
_IDENTIFIER = re.compile(r"\$(RepresentationID|Number|Bandwidth|Time|SubNumber)(?:%0(\d{1,2})d)?\$|\$\$")


def _path(url: str) -> str:
    return url.partition("#")[0].partition("?")[0].lower()


def is_hls(url: str, content_type: str) -> bool:
    """Whether a response is an HLS playlist, by its type or (when the type is vague) its name."""
    return content_type in HLS_TYPES or (content_type in _VAGUE_TYPES and _path(url).endswith(HLS_SUFFIXES))


def is_dash(url: str, content_type: str) -> bool:
    """Whether a response is a DASH manifest, by its type or (when the type is vague) its name."""
    return content_type in DASH_TYPES or (content_type in _VAGUE_TYPES and _path(url).endswith(DASH_SUFFIXES))


def is_manifest(url: str, content_type: str) -> bool:
    """Whether a response is a stream manifest (whose links the crawl reads)."""
    return is_hls(url, content_type) or is_dash(url, content_type)


class _Links(LinkList):
    """The links of a manifest: at most ``limit``; segments beyond it counted without being computed."""

    def add(self, resolver: Resolver, reference: str | None, context: str) -> None:
        url = resolver.resolve(reference) if reference else None
        if url:
            self.append(Link(url, EMBED, context))

    @property
    def room(self) -> int:
        return self.limit - len(self)


# --- HLS ---------------------------------------------------------------------------------------------------


def _attributes(text: str) -> dict[str, str]:
    """An HLS attribute list (``BANDWIDTH=1280000,URI="a.m3u8"``) as a dict, quotes removed."""
    return {name: value.strip('"') for name, value in _ATTRIBUTE.findall(text)}


def _bandwidth(value: str | None) -> int:
    try:
        return max(int(value or 0), 0)
    except ValueError:
        return 0


def hls_links(text: str, resolver: Resolver, *, variants: str, limit: int) -> _Links:
    """The variants, renditions, segments, init segments and keys of an HLS playlist."""
    links = _Links(limit)
    streams: list[tuple[int, str, dict[str, str]]] = []  # (bandwidth, URI, attributes) of each variant
    frames: list[tuple[int, str]] = []
    media: list[dict[str, str]] = []
    pending: dict[str, str] | None = None  # the EXT-X-STREAM-INF whose URI is the next line
    for line in text.splitlines():
        line = line.strip()
        if not line or len(line) > MAX_LINE:
            continue
        if line[0] != "#":
            if pending is not None:
                if len(streams) + len(frames) + len(media) < limit:  # held until the end: bounded
                    streams.append((_bandwidth(pending.get("BANDWIDTH")), line, pending))
                else:
                    links.skipped += 1
                pending = None
            else:
                links.add(resolver, line, "hls/segment")
            continue
        tag, _, value = line.partition(":")
        if tag == "#EXT-X-STREAM-INF":
            pending = _attributes(value)
        elif tag in ("#EXT-X-I-FRAME-STREAM-INF", "#EXT-X-MEDIA"):
            if len(streams) + len(frames) + len(media) >= limit:
                links.skipped += 1
            elif tag == "#EXT-X-MEDIA":
                media.append(_attributes(value))
            else:
                attributes = _attributes(value)
                frames.append((_bandwidth(attributes.get("BANDWIDTH")), attributes.get("URI", "")))
        elif tag == "#EXT-X-MAP":
            links.add(resolver, _attributes(value).get("URI"), "hls/map")
        elif tag in ("#EXT-X-KEY", "#EXT-X-SESSION-KEY"):
            attributes = _attributes(value)
            if attributes.get("METHOD", "").upper() != "NONE":
                links.add(resolver, attributes.get("URI"), "hls/key")
    if variants == VARIANTS_BEST and streams:
        best = max(streams, key=lambda stream: stream[0])  # the first of the highest
        streams = [best]
        groups = {best[2].get(kind) for kind in ("AUDIO", "VIDEO", "SUBTITLES")} - {None}
        media = [rendition for rendition in media if rendition.get("GROUP-ID") in groups]
        frames = []  # trick play: not needed to watch the stream
    for stream in streams:
        links.add(resolver, stream[1], "hls/variant")
    for rendition in media:
        links.add(resolver, rendition.get("URI"), "hls/media")
    for frame in frames:
        links.add(resolver, frame[1], "hls/i-frames")
    return links


# --- DASH --------------------------------------------------------------------------------------------------


class _BoundedBuilder(TreeBuilder):
    """An ElementTree builder that refuses a document too deep or with too many elements."""

    def __init__(self):
        super().__init__()
        self.depth = 0
        self.elements = 0

    def start(self, tag, attributes):
        self.depth += 1
        self.elements += 1
        if self.depth > MAX_XML_DEPTH or self.elements > MAX_XML_ELEMENTS:
            raise ValueError("manifest too deep or too large")
        return super().start(tag, attributes)

    def end(self, tag):
        self.depth -= 1
        return super().end(tag)


def parse_mpd(text: str) -> Element:
    """The root of an MPD: no DTD (so no entity), bounded depth and size; raises ValueError otherwise."""
    parser = DefusedXMLParser(target=_BoundedBuilder(), forbid_dtd=True, forbid_entities=True)
    try:
        parser.feed(text)
        return parser.close()
    except ValueError:
        raise
    except Exception as error:  # expat errors, DTDForbidden…
        raise ValueError(f"not a readable MPD: {error}") from error


def _local(tag: str) -> str:
    return tag.rpartition("}")[2]


def _children(element: Element, name: str) -> list[Element]:
    return [child for child in element if _local(child.tag) == name]


def _child(element: Element | None, name: str) -> Element | None:
    if element is None:
        return None
    return next((child for child in element if _local(child.tag) == name), None)


def parse_duration(value: str | None) -> float | None:
    """Seconds of an ISO 8601 duration (``PT1M30.5S``), or None."""
    match = _DURATION.match(value or "")
    if not match or not any(match.groups()):
        return None
    days, hours, minutes, seconds = (float(group or 0) for group in match.groups())
    return ((days * 24 + hours) * 60 + minutes) * 60 + seconds


def _integer(value: str | None, default: int) -> int:
    try:
        number = int(value) if value is not None else default
    except ValueError:
        return default
    return number if abs(number) < 2**63 else default


def _base(resolver: Resolver, element: Element) -> Resolver:
    """The resolver under ``element``: its first ``BaseURL`` resolved against the one above."""
    base = _child(element, "BaseURL")
    if base is None or not (base.text or "").strip():
        return resolver
    url = resolver.resolve(base.text.strip())
    return Resolver(url) if url else resolver


def _fill(template: str, values: dict[str, object]) -> str:
    """A SegmentTemplate string with its ``$Identifier$`` (and ``$Number%05d$``) replaced."""

    def replace(match: re.Match) -> str:
        name = match.group(1)
        if name is None:
            return "$"
        value = values.get(name)
        if value is None:
            return match.group(0)
        width = match.group(2)
        if width and isinstance(value, int) and int(width) <= MAX_NUMBER_WIDTH:
            return f"{value:0{int(width)}d}"
        return str(value)

    return _IDENTIFIER.sub(replace, template)


class _Mpd:
    """What one MPD says about time: static or dynamic, its duration, the live window."""

    def __init__(self, root: Element, now: float):
        self.dynamic = root.get("type", "static") == "dynamic"
        self.duration = parse_duration(root.get("mediaPresentationDuration"))
        self.window = parse_duration(root.get("timeShiftBufferDepth")) or LIVE_WINDOW
        self.started = _timestamp(root.get("availabilityStartTime"))
        self.now = now


def _timestamp(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.strip().replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _template(levels: list[Element | None], name: str) -> dict[str, str] | None:
    """The attributes of ``name`` (SegmentTemplate…) inherited from Period down to Representation."""
    merged: dict[str, str] = {}
    timeline: Element | None = None
    found = False
    for level in levels:
        element = _child(level, name)
        if element is None:
            continue
        found = True
        merged.update(element.attrib)
        found_timeline = _child(element, "SegmentTimeline")
        if found_timeline is not None:
            timeline = found_timeline
        merged["__element__"] = element  # type: ignore[assignment]
    if not found:
        return None
    merged["__timeline__"] = timeline  # type: ignore[assignment]
    return merged


def _timeline_runs(timeline: Element, end: float | None, timescale: int) -> Iterator[tuple[int, int, int]]:
    """``(start, duration, count)`` of each ``<S>`` of a SegmentTimeline (``@r`` of -1: up to ``end``)."""
    entries = _children(timeline, "S")
    start = 0
    for index, entry in enumerate(entries):
        start = _integer(entry.get("t"), start)
        duration = _integer(entry.get("d"), 0)
        if duration <= 0:
            return
        repeat = _integer(entry.get("r"), 0)
        if repeat < 0:
            following = _integer(entries[index + 1].get("t"), -1) if index + 1 < len(entries) else -1
            if following > start:
                repeat = math.ceil((following - start) / duration) - 1
            elif end is not None:
                repeat = max(math.ceil((end * timescale - start) / duration) - 1, 0)
            else:
                repeat = MAX_LIVE_SEGMENTS - 1
        yield start, duration, repeat + 1
        start += duration * (repeat + 1)


def _template_links(
    links: _Links,
    resolver: Resolver,
    template: dict,
    values: dict[str, object],
    period: tuple[float, float | None],
    mpd: _Mpd,
) -> None:
    """The init segment and media segments of a SegmentTemplate."""
    for attribute, context in (("initialization", "dash/init"), ("index", "dash/index")):
        if template.get(attribute):
            links.add(resolver, _fill(template[attribute], values), context)
    media = template.get("media")
    if not media:
        return
    timescale = max(_integer(template.get("timescale"), 1), 1)
    start_number = _integer(template.get("startNumber"), 1)
    period_start, period_duration = period
    timeline = template.get("__timeline__")
    if timeline is not None:
        runs = list(_timeline_runs(timeline, period_duration, timescale))
        total = sum(count for _start, _duration, count in runs)
        # A live timeline: only its last segments (the older ones are gone from the server).
        drop = max(total - MAX_LIVE_SEGMENTS, 0) if mpd.dynamic else 0
        number = start_number
        for start, each, count in runs:
            dropped = min(drop, count)
            drop -= dropped
            first = dropped
            computed = min(count - first, links.room)
            for index in range(first, first + computed):
                filled = _fill(media, {**values, "Number": number + index, "Time": start + index * each})
                links.add(resolver, filled, "dash/segment")
            links.skipped += count - first - computed
            number += count
        return
    duration = _integer(template.get("duration"), 0)
    if duration <= 0:
        return
    seconds = duration / timescale
    if not mpd.dynamic or (period_duration is not None and mpd.started is None):
        if period_duration is None:
            return  # a static MPD without a duration: no way to know how many segments
        first, count = 0, math.ceil(period_duration / seconds - 1e-9)
    else:
        if mpd.started is None:
            return
        elapsed = mpd.now - mpd.started - period_start
        if period_duration is not None:
            elapsed = min(elapsed, period_duration)
        available = int(elapsed // seconds)  # segments complete by now
        count = min(available, math.ceil(mpd.window / seconds), MAX_LIVE_SEGMENTS)
        first = max(available - count, 0)
    computed = min(count, links.room)
    for number in range(first, first + computed):
        filled = _fill(media, {**values, "Number": start_number + number, "Time": number * duration})
        links.add(resolver, filled, "dash/segment")
    links.skipped += count - computed


def _representation_links(
    links: _Links,
    resolver: Resolver,
    levels: list[Element | None],
    representation: Element,
    period: tuple[float, float | None],
    mpd: _Mpd,
) -> None:
    resolver = _base(resolver, representation)
    values = {
        "RepresentationID": representation.get("id", ""),
        "Bandwidth": _integer(representation.get("bandwidth"), 0),
    }
    everywhere = [*levels, representation]
    template = _template(everywhere, "SegmentTemplate")
    if template is not None:
        _template_links(links, resolver, template, values, period, mpd)
        return
    inherited = _template(everywhere, "SegmentList")
    if inherited is not None:
        segment_list = inherited["__element__"]
        initialization = _child(segment_list, "Initialization")
        if initialization is not None:
            links.add(resolver, initialization.get("sourceURL"), "dash/init")
        for segment in _children(segment_list, "SegmentURL"):
            links.add(resolver, segment.get("media"), "dash/segment")
            links.add(resolver, segment.get("index"), "dash/index")
        return
    # SegmentBase, or nothing: the BaseURL is the media file itself (read by byte ranges).
    segment_base = _template(everywhere, "SegmentBase")
    if segment_base is not None:
        initialization = _child(segment_base["__element__"], "Initialization")
        if initialization is not None:
            links.add(resolver, initialization.get("sourceURL"), "dash/init")
    if _child(representation, "BaseURL") is not None:
        links.append(Link(resolver.base, EMBED, "dash/base"))


def dash_links(
    text: str, resolver: Resolver, *, variants: str, limit: int, now: float | None = None
) -> _Links:
    """The init segments and segments of every (or the best) Representation of a DASH MPD."""
    links = _Links(limit)
    root = parse_mpd(text)
    if _local(root.tag) != "MPD":
        return links
    mpd = _Mpd(root, time.time() if now is None else now)
    resolver = _base(resolver, root)
    periods = _children(root, "Period")
    for index, period in enumerate(periods):
        start = parse_duration(period.get("start")) or 0.0
        duration = parse_duration(period.get("duration"))
        if duration is None and index == len(periods) - 1 and mpd.duration is not None:
            duration = max(mpd.duration - start, 0.0)
        elif duration is None and index + 1 < len(periods):
            following = parse_duration(periods[index + 1].get("start"))
            duration = following - start if following is not None and following > start else None
        period_resolver = _base(resolver, period)
        for adaptation in _children(period, "AdaptationSet"):
            set_resolver = _base(period_resolver, adaptation)
            representations = _children(adaptation, "Representation")
            if variants == VARIANTS_BEST and representations:
                representations = [
                    max(representations, key=lambda element: _integer(element.get("bandwidth"), 0))
                ]
            for representation in representations:
                _representation_links(
                    links, set_resolver, [period, adaptation], representation, (start, duration), mpd
                )
    return links


class StreamExtractor:
    """HLS playlists and DASH manifests: their variants (all, or the best) and every segment."""

    name = "streams"

    def accepts(self, document: Document) -> bool:
        """Manifests by type, or by a ``.m3u8``/``.m3u``/``.mpd`` name when the type is vague."""
        return is_manifest(document.url, document.content_type)

    def extract(self, document: Document, options: ExtractOptions) -> Iterable[Link]:
        """The links of the playlist or MPD (an unreadable MPD gives none)."""
        if is_hls(document.url, document.content_type):
            text, encoding = decode(document.body, declared=document.charset or "utf-8")
            resolver = Resolver(document.url, encoding)
            return hls_links(text, resolver, variants=options.stream_variants, limit=options.max_links)
        text, encoding = decode(document.body, declared=document.charset, sniff=sniff_xml_charset)
        text = text.lstrip()
        if text.startswith("<?xml"):
            text = text.partition("?>")[2]  # decoded already: expat must not decode it again
        resolver = Resolver(document.url, encoding)
        return dash_links(text, resolver, variants=options.stream_variants, limit=options.max_links)
