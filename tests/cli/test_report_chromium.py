"""The report rendered by a real browser: headless Chromium takes a screenshot of the page and
the PNG must show a page with pictures (many colours, the segment colours among them), not a
blank one. Chromium is Debian's ``chromium`` package, which ``make install`` installs
(``scripts/ensure-chromium.sh``); without it this test fails and says so."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
from cli_support import Cli
from png_support import decode_png
from report_support import build_data_dir

from seglog.cli.report import SEGMENT_COLOURS
from seglog.engine.inspect.report_data import SegmentKind

WIDTH, HEIGHT = 1200, 2000
CHROMIUM_TIMEOUT_S = 120
MISSING = (
    "Chromium is not installed (no 'chromium' on PATH, no /usr/bin/chromium): run "
    "'make install', which installs Debian's chromium package (scripts/ensure-chromium.sh)"
)


def chromium_binary() -> str:
    """The Chromium executable; fails the test (not skips) when there is none."""
    found = shutil.which("chromium") or (
        "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None
    )
    assert found is not None, MISSING
    return found


def screenshot(page: Path, png: Path, profile: Path) -> None:
    """Headless Chromium's screenshot of ``page`` (a file URL), at WIDTH x HEIGHT."""
    command = [
        chromium_binary(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        f"--screenshot={png}",
        f"--window-size={WIDTH},{HEIGHT}",
        page.resolve().as_uri(),
    ]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=CHROMIUM_TIMEOUT_S, check=False
    )
    assert done.returncode == 0 and png.exists(), (done.returncode, done.stderr[-2000:])


def hex_colour(text: str) -> tuple[int, int, int]:
    """``#rrggbb`` as a tuple."""
    return int(text[1:3], 16), int(text[3:5], 16), int(text[5:7], 16)


def test_chromium_renders_the_report_with_pictures(cli: Cli, tmp_path: Path) -> None:
    chromium_binary()
    build_data_dir(cli.data_dir)
    page = tmp_path / "report.html"
    cli.ok("report", "--out", page)
    png = tmp_path / "shot.png"
    screenshot(page, png, tmp_path / "profile")

    image = decode_png(png)
    assert (image.width, image.height) == (WIDTH, HEIGHT)
    rgb = image.pixels[:, :, :3].reshape(-1, 3)
    non_white = float((rgb.min(axis=1) < 240).mean())
    distinct = len(np.unique(rgb, axis=0))
    assert non_white > 0.03, f"only {non_white:.2%} of the screenshot is not white"
    assert distinct > 100, f"only {distinct} distinct colours: a blank or text-only page"
    # The segment bar is drawn: the clean, dirty and active colours each cover a good area.
    colours, counts = np.unique(rgb, axis=0, return_counts=True)
    area = {tuple(int(v) for v in c): int(n) for c, n in zip(colours, counts, strict=True)}
    for kind in (SegmentKind.CLEAN, SegmentKind.DIRTY, SegmentKind.ACTIVE):
        pixels = area.get(hex_colour(SEGMENT_COLOURS[kind][0]), 0)
        assert pixels > 2000, f"{kind}: {pixels} pixels of its colour"
