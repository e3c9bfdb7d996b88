"""A small PNG decoder for screenshot checks (no Pillow): 8-bit greyscale, RGB or RGBA,
non-interlaced, which is what Chromium's ``--screenshot`` writes.

Format (PNG spec, ISO/IEC 15948): the 8-byte signature, then chunks ``length (4, big-endian) |
type (4) | data | CRC32 (4)``; ``IHDR`` holds width, height, bit depth, colour type,
compression, filter and interlace methods; the concatenated ``IDAT`` data is one zlib stream of
``height`` scanlines, each a filter-type byte (0 None, 1 Sub, 2 Up, 3 Average, 4 Paeth) and
``width * channels`` bytes. Sub and Up are undone with numpy; Average and Paeth (sequential
along a row) in Python.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

SIGNATURE = b"\x89PNG\r\n\x1a\n"
CHANNELS = {0: 1, 2: 3, 6: 4}  # colour type -> samples per pixel (8-bit only)


@dataclass(frozen=True)
class Image:
    """Decoded pixels: ``pixels[y, x, channel]`` (uint8)."""

    width: int
    height: int
    pixels: np.ndarray


def _paeth_row(line: bytearray, prev: bytes, bpp: int) -> None:
    for i in range(len(line)):
        a = line[i - bpp] if i >= bpp else 0
        b = prev[i]
        c = prev[i - bpp] if i >= bpp else 0
        p = a + b - c
        pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
        if pa <= pb and pa <= pc:
            predictor = a
        elif pb <= pc:
            predictor = b
        else:
            predictor = c
        line[i] = (line[i] + predictor) & 0xFF


def _average_row(line: bytearray, prev: bytes, bpp: int) -> None:
    for i in range(len(line)):
        a = line[i - bpp] if i >= bpp else 0
        line[i] = (line[i] + ((a + prev[i]) >> 1)) & 0xFF


def decode_png(path: Path) -> Image:
    """The pixels of the PNG file at ``path``; ``ValueError`` for anything unsupported."""
    data = path.read_bytes()
    if not data.startswith(SIGNATURE):
        raise ValueError(f"{path}: not a PNG file")
    position = len(SIGNATURE)
    header: tuple[int, ...] | None = None
    compressed = bytearray()
    while position + 8 <= len(data):
        (length,) = struct.unpack(">I", data[position : position + 4])
        kind = data[position + 4 : position + 8]
        body = data[position + 8 : position + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            compressed += body
        elif kind == b"IEND":
            break
        position += 12 + length
    if header is None:
        raise ValueError(f"{path}: no IHDR chunk")
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in CHANNELS or interlace != 0:
        raise ValueError(f"{path}: unsupported PNG (depth {depth}, colour {colour})")
    bpp = CHANNELS[colour]
    stride = width * bpp
    raw = zlib.decompress(bytes(compressed))
    if len(raw) != height * (stride + 1):
        raise ValueError(f"{path}: {len(raw)} bytes of scanlines, expected {height * (stride + 1)}")
    out = np.zeros((height, stride), dtype=np.uint8)
    prev = np.zeros(stride, dtype=np.uint8)
    for y in range(height):
        start = y * (stride + 1)
        kind_byte = raw[start]
        line = np.frombuffer(raw, dtype=np.uint8, count=stride, offset=start + 1)
        if kind_byte == 0:
            row = line.copy()
        elif kind_byte == 1:  # Sub: running sum per channel along the row, modulo 256
            row = (
                (np.cumsum(line.reshape(width, bpp), axis=0, dtype=np.uint64) % 256)
                .astype(np.uint8)
                .reshape(stride)
            )
        elif kind_byte == 2:  # Up
            row = line + prev  # uint8 arithmetic wraps modulo 256
        elif kind_byte in (3, 4):
            buffer = bytearray(line.tobytes())
            (_average_row if kind_byte == 3 else _paeth_row)(buffer, prev.tobytes(), bpp)
            row = np.frombuffer(bytes(buffer), dtype=np.uint8)
        else:
            raise ValueError(f"{path}: row {y} has unknown filter {kind_byte}")
        out[y] = row
        prev = out[y]
    return Image(width, height, out.reshape(height, width, bpp))
