"""Just enough of PNG to look at a screenshot: 8-bit RGB or RGBA, not interlaced (what
Chromium writes), decoded with zlib and the five scanline filters of the PNG spec."""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

SIGNATURE = b"\x89PNG\r\n\x1a\n"
CHANNELS = {2: 3, 6: 4}  # colour type -> bytes per pixel at bit depth 8


@dataclass(frozen=True)
class Image:
    width: int
    height: int
    channels: int
    rows: list[bytes]  # unfiltered scanlines

    def pixel(self, x: int, y: int) -> tuple[int, int, int]:
        i = x * self.channels
        r, g, b = self.rows[y][i:i + 3]
        return r, g, b


def _chunks(data: bytes) -> dict[bytes, list[bytes]]:
    if not data.startswith(SIGNATURE):
        raise ValueError("not a PNG file")
    found: dict[bytes, list[bytes]] = {}
    pos = len(SIGNATURE)
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        found.setdefault(kind, []).append(data[pos + 8:pos + 8 + length])
        pos += 12 + length
    return found


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def _unfilter(kind: int, line: bytearray, prior: bytes, bpp: int) -> bytes:
    if kind == 1:
        for i in range(bpp, len(line)):
            line[i] = (line[i] + line[i - bpp]) & 0xFF
    elif kind == 2:
        line = bytearray((x + y) & 0xFF for x, y in zip(line, prior, strict=True))
    elif kind == 3:
        for i in range(len(line)):
            left = line[i - bpp] if i >= bpp else 0
            line[i] = (line[i] + ((left + prior[i]) >> 1)) & 0xFF
    elif kind == 4:
        for i in range(len(line)):
            left, upleft = (line[i - bpp], prior[i - bpp]) if i >= bpp else (0, 0)
            line[i] = (line[i] + _paeth(left, prior[i], upleft)) & 0xFF
    elif kind != 0:
        raise ValueError(f"unknown PNG filter {kind}")
    return bytes(line)


def decode(data: bytes) -> Image:
    chunks = _chunks(data)
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunks[b"IHDR"][0])
    if depth != 8 or colour not in CHANNELS or interlace:
        raise ValueError(f"unsupported PNG: depth {depth}, colour type {colour}, "
                         f"interlace {interlace}")
    bpp = CHANNELS[colour]
    raw = zlib.decompress(b"".join(chunks[b"IDAT"]))
    stride = width * bpp
    rows: list[bytes] = []
    prior = bytes(stride)
    for y in range(height):
        start = y * (stride + 1)
        prior = _unfilter(raw[start], bytearray(raw[start + 1:start + 1 + stride]), prior, bpp)
        rows.append(prior)
    return Image(width, height, bpp, rows)
