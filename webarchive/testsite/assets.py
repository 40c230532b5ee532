"""Binary bodies of the generated website: images, fonts, media, the favicon and the large file.

Each body is derived from a 64-bit key (the seed and the path), so the same
site always serves the same bytes. PNG images and the favicon are real images;
the other formats start with their real signature and carry filler, which is
all a crawler looks at.
"""

from __future__ import annotations

import random
import struct
import zlib
from collections.abc import Iterator

LARGE_FILE_BLOCK = 1024 * 1024  # the large file repeats one block of this size
LARGE_FILE_CHUNK = 64 * 1024

CONTENT_TYPES = {
    "png": "image/png",
    "jpg": "image/jpeg",
    "webp": "image/webp",
    "ico": "image/x-icon",
    "svg": "image/svg+xml",
    "webm": "video/webm",
    "woff": "font/woff",
    "woff2": "font/woff2",
    "bin": "application/octet-stream",
}


def _rng(key: int) -> random.Random:
    return random.Random(key)  # noqa: S311  (test content, not secrets)


def png(key: int) -> bytes:
    """A small, valid, noisy RGB PNG (16 to 40 pixels a side)."""
    rng = _rng(key)
    width, height = rng.randint(16, 40), rng.randint(16, 40)
    rows = b"".join(b"\x00" + rng.randbytes(width * 3) for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + _png_chunk(b"IDAT", zlib.compress(rows))
        + _png_chunk(b"IEND", b"")
    )


def _png_chunk(tag: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))


def favicon(key: int) -> bytes:
    """A valid ICO file holding one PNG image."""
    image = png(key)
    header = struct.pack("<HHH", 0, 1, 1)
    entry = struct.pack("<BBBBHHII", 0, 0, 0, 0, 1, 32, len(image), 6 + 16)
    return header + entry + image


def binary(extension: str, key: int) -> bytes:
    """The body of an asset with this file extension (``png``, ``jpg``, ``woff2``…)."""
    if extension == "png":
        return png(key)
    if extension == "ico":
        return favicon(key)
    if extension == "svg":
        return svg(key)
    rng = _rng(key)
    filler = rng.randbytes(rng.randint(600, 6000))
    if extension == "jpg":
        # A JPEG comment segment holds the filler (at most 6,000 bytes: under its 65,533 limit).
        return b"\xff\xd8\xff\xfe" + struct.pack(">H", len(filler) + 2) + filler + b"\xff\xd9"
    if extension == "webp":
        payload = b"WEBPVP8 " + struct.pack("<I", len(filler)) + filler
        return b"RIFF" + struct.pack("<I", len(payload)) + payload
    if extension == "woff2":
        return b"wOF2" + filler
    if extension == "woff":
        return b"wOFF" + filler
    if extension == "webm":
        return b"\x1a\x45\xdf\xa3" + filler
    raise ValueError(f"no generator for .{extension}")


def svg(key: int) -> bytes:
    """A small bar chart as SVG."""
    rng = _rng(key)
    bars = "".join(
        f'<rect x="{10 + 30 * i}" y="{100 - h}" width="20" height="{h}" fill="#369"/>'
        for i, h in enumerate(rng.randint(10, 90) for _ in range(8))
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<svg xmlns="http://www.w3.org/2000/svg" width="260" height="110">{bars}</svg>\n'
    ).encode()


def large_file_block(key: int, size: int) -> bytes:
    """The block the large file repeats (random bytes, so that compression does not shrink it)."""
    return _rng(key).randbytes(min(size, LARGE_FILE_BLOCK))


def large_file_chunks(block: bytes, size: int) -> Iterator[bytes]:
    """The large file's ``size`` bytes, ``block`` repeated, in 64 KiB pieces."""
    sent = 0
    while sent < size:
        offset = sent % len(block)
        piece = block[offset : offset + min(LARGE_FILE_CHUNK, size - sent)]
        yield piece
        sent += len(piece)


# Documents for the full-text index: a PDF and a plain-text file in French, linked from no page (the
# crawls' ground truth does not change); the tests fetch them as seeds.
DOCUMENT_LINES = (
    "Rapport annuel de la bibliothèque",
    "Le dépôt légal du web conserve les sites français depuis 2006.",
    "Les moissons sélectives complètent la collecte large de l'été.",
)
NOTES_TEXT = (
    "Notes de lecture\n"
    "Les élèves ont consulté les archives électorales au château.\n"
    "Prochaine réunion : mercredi, salle des périodiques.\n"
)


def _pdf_string(text: str) -> bytes:
    """A PDF literal string in the standard fonts' encoding (Latin-1 covers these lines)."""
    data = text.encode("latin-1")
    return b"(" + data.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)") + b")"


def pdf_document(title: str = DOCUMENT_LINES[0], lines: tuple[str, ...] = DOCUMENT_LINES) -> bytes:
    """A one-page PDF whose text is ``lines``, with ``title`` in its information dictionary."""
    content = (
        b"BT /F1 12 Tf 72 720 Td 16 TL " + b" ".join(_pdf_string(line) + b" '" for line in lines) + b" ET"
    )
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
        b"<< /Title " + _pdf_string(title) + b" >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info 6 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)
