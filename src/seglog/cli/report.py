"""``seglog report [--out report.html]``: one self-contained HTML page with pictures.

The page holds everything inline: one ``<style>`` element and inline SVG drawn here; no
script, no external style sheet, image or font, so it opens from a file anywhere (and a CSP
of ``default-src 'none'; style-src 'unsafe-inline'`` is declared in the page itself).

What it shows (data from :func:`seglog.engine.inspect.report_data.gather_report`):

* a header: when, the data dirs, whether they were opened read-only, the topics, problems met
  (damaged history files, ...);
* per topic, the configs that decide cleaning and retention (``cleanup.policy``,
  ``retention.ms``, ``retention.bytes``, ``segment.bytes``, ``min.cleanable.dirty.ratio``...);
* per partition:

  1. its segments as one bar, each segment a rectangle as wide as its share of the bytes
     (at least :data:`SEGMENT_MIN_WIDTH` px), coloured by kind (clean: below the cleaner
     checkpoint; dirty; not yet cleanable; active; closed for logs without ``compact``),
     labelled with base offsets and sizes where they fit; every rectangle has a ``<title>``
     tooltip with all of it, and the cleaner checkpoint is marked;
  2. compacted logs: the dirty ratio as a gauge with ``min.cleanable.dirty.ratio`` marked;
  3. the cleaner's rounds, the compactor's runs and the retention deletions as bar charts
     over time (oldest left), each followed by a table with the exact figures.

Markup contract (tests and scripts may rely on it): each partition is a
``<section class="partition" data-partition="NAME">``; its segment bar is
``<svg class="segments">`` holding one ``<rect class="seg seg-KIND">`` per segment, in offset
order, with ``data-base-offset`` and ``data-size``; the history charts are
``<svg class="chart cleaner-chart|compaction-chart|retention-chart">``, one
``<g class="point">`` per entry; the tables are ``<table class="history ...">``.

Every string that comes from the data (topic names, config values, paths, reasons, messages)
is HTML-escaped (quotes too), so a hostile topic name shows as text and never becomes markup.

Opens the data dirs read-only (no lock, nothing written there), so it works on a directory
a broker or ``seglog maintain`` holds. The page is
written atomically (tmp file, fsync, rename); the command prints its path.

Why this module is longer than the house's ~500 lines: it draws every picture of the page
(inline SVG, no library), one short function per chart; the numbers themselves come from
:mod:`seglog.engine.inspect.report_data`.
"""

from __future__ import annotations

import argparse
import datetime
import html
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from seglog import __version__
from seglog.cli.common import EXIT_OK, command_options_parent, open_manager
from seglog.cli.text import plural
from seglog.engine.inspect.report_data import (
    CleanerRound,
    CompactionRunRow,
    DirtyRatio,
    PartitionReport,
    Report,
    RetentionEvent,
    SegmentKind,
    TopicReport,
    gather_report,
)
from seglog.storage.atomic import check_output_path, write_output_file

if TYPE_CHECKING:
    from seglog.cli.common import Subparsers

DEFAULT_OUT = "report.html"
SVG_WIDTH = 1000
SEGMENT_MIN_WIDTH = 3
SEGMENT_GAP = 1
CHART_HEIGHT = 200
CHART_POINTS_MAX = 200  # histories are bounded (50 entries); a guard for hand-made files

EPILOG = """\
Examples:
  seglog --data-dir /var/lib/seglog report
  seglog --data-dir /var/lib/kafka report --out /tmp/kafka.html"""

#: Fill colour of each segment kind, and its legend text.
SEGMENT_COLOURS: dict[SegmentKind, tuple[str, str]] = {
    SegmentKind.CLEAN: ("#2e7d32", "clean (below the cleaner checkpoint)"),
    SegmentKind.DIRTY: ("#e65100", "dirty (cleanable now)"),
    SegmentKind.UNCLEANABLE: ("#f9a825", "dirty, not yet cleanable (compaction lag)"),
    SegmentKind.ACTIVE: ("#1565c0", "active segment"),
    SegmentKind.CLOSED: ("#78909c", "closed segment (no compaction)"),
}
BEFORE_COLOUR = "#8e99a8"
AFTER_COLOUR = "#2e7d32"
RULE_COLOURS = {
    "retention.ms": "#6a1b9a",
    "retention.bytes": "#c62828",
    "log start offset": "#00838f",
}
UNLISTED_COLOUR = "#555"  # retention bytes of segments the bounded history does not list

STYLE = """
body { font-family: system-ui, sans-serif; margin: 24px; color: #1d2330; background: #fff; }
h1 { margin: 0 0 4px 0; } h2 { margin-top: 32px; border-bottom: 2px solid #1565c0; }
h3 { margin: 20px 0 6px 0; } h4 { margin: 14px 0 4px 0; font-size: 14px; }
table { border-collapse: collapse; font-size: 13px; margin: 6px 0 10px 0; }
td, th { border: 1px solid #ccd3de; padding: 2px 8px; text-align: left; vertical-align: top; }
th { background: #eef2f8; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.meta { color: #4a5568; font-size: 13px; } .problem { color: #b71c1c; }
section.partition { border: 1px solid #dde3ec; border-radius: 6px; padding: 8px 14px;
  margin: 12px 0; background: #fbfcfe; }
svg { display: block; max-width: 100%; height: auto; } .legend span { margin-right: 14px; }
.swatch { display: inline-block; width: 12px; height: 12px; margin-right: 4px;
  vertical-align: middle; }
"""


def register(subparsers: Subparsers) -> None:
    """Add ``seglog report``."""
    parser = subparsers.add_parser(
        "report",
        parents=[command_options_parent()],
        help="write a self-contained HTML report with pictures of segments and histories",
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--out",
        default=DEFAULT_OUT,
        metavar="FILE",
        help=f"where to write the page (default: {DEFAULT_OUT})",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Gather, render, write the page; print its path."""
    out = Path(args.out)
    check_output_path(out, "--out", DEFAULT_OUT)  # before the work, not after it
    with open_manager(args) as manager:
        report = gather_report(manager)
    write_output_file(out, render_report(report).encode("utf-8"))
    print(out)
    return EXIT_OK


# --- formatting -------------------------------------------------------------------------------


def esc(value: object) -> str:
    """``str(value)`` escaped for HTML text and attribute values (quotes included)."""
    return html.escape(str(value), quote=True)


def format_bytes(size: int) -> str:
    """``1536`` -> ``1.5 KiB`` (bytes below 1 KiB as ``123 B``)."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def format_time(ms: int) -> str:
    """Milliseconds since the epoch as UTC ``YYYY-MM-DD HH:MM:SS``."""
    try:
        moment = datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC)
    except (OverflowError, OSError, ValueError):
        return str(ms)
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def _table(cls: str, header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """An HTML table; ``int``/``float`` cells are right-aligned."""
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = []
    for row in rows:
        cells = "".join(
            f'<td class="num">{esc(c)}</td>'
            if isinstance(c, int | float) and not isinstance(c, bool)
            else f"<td>{esc(c)}</td>"
            for c in row
        )
        body.append(f"<tr>{cells}</tr>")
    return f'<table class="{esc(cls)}"><tr>{head}</tr>{"".join(body)}</table>'


# --- pictures ---------------------------------------------------------------------------------


def segment_widths(sizes: Sequence[int], total_width: int) -> list[float]:
    """Widths proportional to ``sizes``, each at least :data:`SEGMENT_MIN_WIDTH`, gaps of
    :data:`SEGMENT_GAP` between them, summing to ``total_width`` (or to the minimum when there
    are too many segments to fit: the SVG then grows and scales down with its viewBox)."""
    count = len(sizes)
    if count == 0:
        return []
    spare = total_width - count * SEGMENT_MIN_WIDTH - (count - 1) * SEGMENT_GAP
    total = sum(sizes)
    if spare <= 0:
        return [float(SEGMENT_MIN_WIDTH)] * count
    if total == 0:
        return [SEGMENT_MIN_WIDTH + spare / count] * count
    return [SEGMENT_MIN_WIDTH + spare * size / total for size in sizes]


def render_segments(partition: PartitionReport) -> str:
    """The segment bar of a partition (module docstring)."""
    bars = partition.segments
    widths = segment_widths([b.size_bytes for b in bars], SVG_WIDTH)
    width = max(SVG_WIDTH, int(sum(widths) + SEGMENT_GAP * max(len(widths) - 1, 0)) + 1)
    top, bar_height, height = 22, 40, 110
    parts = [
        f'<svg class="segments" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="segments of {esc(partition.name)}">'
    ]
    x = 0.0
    boundary_x: float | None = None
    checkpoint = partition.dirty.first_dirty_offset if partition.dirty else None
    for bar, w in zip(bars, widths, strict=True):
        colour = SEGMENT_COLOURS[bar.kind][0]
        tooltip = (
            f"{partition.name} segment {bar.base_offset}: offsets [{bar.base_offset}, "
            f"{bar.end_offset}), {bar.size_bytes} bytes, {bar.kind}"
        )
        parts.append(
            f'<rect class="seg seg-{esc(bar.kind)}" data-base-offset="{bar.base_offset}" '
            f'data-size="{bar.size_bytes}" x="{x:.2f}" y="{top}" width="{w:.2f}" '
            f'height="{bar_height}" fill="{colour}"><title>{esc(tooltip)}</title></rect>'
        )
        if w >= 64:
            parts.append(
                f'<text x="{x + w / 2:.2f}" y="{top + bar_height / 2 + 4}" font-size="11" '
                f'fill="#fff" text-anchor="middle">{esc(format_bytes(bar.size_bytes))}</text>'
            )
        if w >= 48:
            parts.append(
                f'<text x="{x + 1:.2f}" y="{top + bar_height + 14}" font-size="10" '
                f'fill="#333">{esc(bar.base_offset)}</text>'
            )
        if checkpoint is not None and boundary_x is None and bar.end_offset >= checkpoint:
            # The checkpoint sits at the end of the last clean segment (segments are whole).
            boundary_x = x + w if bar.kind is SegmentKind.CLEAN else x
        x += w + SEGMENT_GAP
    parts.append(
        f'<text x="{x - SEGMENT_GAP:.2f}" y="{top + bar_height + 14}" font-size="10" '
        f'fill="#333" text-anchor="end">end {esc(partition.log_end_offset)}</text>'
    )
    if boundary_x is not None and checkpoint is not None:
        parts.append(
            f'<line class="checkpoint" x1="{boundary_x:.2f}" y1="{top - 6}" '
            f'x2="{boundary_x:.2f}" y2="{top + bar_height + 20}" stroke="#111" '
            f'stroke-width="2" stroke-dasharray="4 2"/>'
            f'<text x="{boundary_x + 3:.2f}" y="{top - 8}" font-size="11" fill="#111">'
            f"first dirty offset {esc(checkpoint)}</text>"
        )
    parts.append(
        f'<text x="0" y="{height - 8}" font-size="11" fill="#555">{plural(len(bars), "segment")}, '
        f"{esc(format_bytes(partition.size_bytes))}, offsets [{partition.log_start_offset}, "
        f"{partition.log_end_offset})</text></svg>"
    )
    return "".join(parts)


def render_dirty_gauge(dirty: DirtyRatio) -> str:
    """The dirty ratio as a horizontal gauge, with ``min.cleanable.dirty.ratio`` marked."""
    width, left, bar_width, height = SVG_WIDTH, 10, SVG_WIDTH - 20, 64
    fill_width = bar_width * min(max(dirty.ratio, 0.0), 1.0)
    threshold_x = left + bar_width * min(max(dirty.threshold, 0.0), 1.0)
    colour = "#c62828" if dirty.ratio >= dirty.threshold else "#ef9a00"
    verdict = "cleanable now" if dirty.is_cleanable else "not cleanable yet"
    return (
        f'<svg class="dirty-gauge" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="dirty ratio">'
        f'<rect x="{left}" y="18" width="{bar_width}" height="18" fill="#e3e8ef" '
        f'stroke="#9aa5b4"/>'
        f'<rect class="dirty-fill" data-ratio="{dirty.ratio:.6f}" x="{left}" y="18" '
        f'width="{fill_width:.2f}" height="18" fill="{colour}"/>'
        f'<line class="threshold" data-threshold="{dirty.threshold}" x1="{threshold_x:.2f}" '
        f'y1="10" x2="{threshold_x:.2f}" y2="44" stroke="#111" stroke-width="3"/>'
        f'<text x="{threshold_x + 4:.2f}" y="12" font-size="11" fill="#111">'
        f"min.cleanable.dirty.ratio {esc(dirty.threshold)}</text>"
        f'<text x="{left}" y="56" font-size="12" fill="#222">dirty ratio {dirty.ratio:.3f} '
        f"({esc(format_bytes(dirty.dirty_bytes))} dirty of "
        f"{esc(format_bytes(dirty.clean_bytes + dirty.dirty_bytes))}; {esc(verdict)})</text>"
        "</svg>"
    )


def render_bar_chart(
    cls: str,
    points: Sequence[tuple[int, Sequence[tuple[int, str, str]]]],
    *,
    value_label: Callable[[int], str] = format_bytes,
) -> str:
    """A chart over time: per point (time_ms, [(value, colour, tooltip), ...]) a group of bars,
    oldest left, with the time under each group and a y axis from 0 to the largest value."""
    points = points[-CHART_POINTS_MAX:]
    width, height = SVG_WIDTH, CHART_HEIGHT
    left, right, top, bottom = 70, 10, 12, 40
    plot_w, plot_h = width - left - right, height - top - bottom
    peak = max((v for _, bars in points for v, _, _ in bars), default=0) or 1
    slot = plot_w / max(len(points), 1)
    parts = [
        f'<svg class="chart {esc(cls)}" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img">',
        f'<line x1="{left}" y1="{top + plot_h}" x2="{width - right}" y2="{top + plot_h}" '
        f'stroke="#333"/><line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" '
        f'stroke="#333"/>',
    ]
    for fraction in (0.0, 0.5, 1.0):
        y = top + plot_h * (1 - fraction)
        parts.append(
            f'<text x="{left - 4}" y="{y + 4:.1f}" font-size="10" text-anchor="end" '
            f'fill="#333">{esc(value_label(int(peak * fraction)))}</text>'
        )
    label_every = max(1, len(points) // 8)
    for i, (time_ms, bars) in enumerate(points):
        x0 = left + i * slot
        bar_w = max(min((slot * 0.8) / max(len(bars), 1), 40.0), 1.0)
        parts.append(f'<g class="point" data-time-ms="{time_ms}">')
        for j, (value, colour, tooltip) in enumerate(bars):
            h = plot_h * max(value, 0) / peak
            x = x0 + slot * 0.1 + j * bar_w
            parts.append(
                f'<rect x="{x:.2f}" y="{top + plot_h - h:.2f}" width="{bar_w:.2f}" '
                f'height="{max(h, 0.5):.2f}" fill="{colour}"><title>{esc(tooltip)}</title></rect>'
            )
        if i % label_every == 0:
            parts.append(
                f'<text x="{x0 + slot * 0.1:.2f}" y="{top + plot_h + 14}" font-size="10" '
                f'fill="#333">{esc(format_time(time_ms)[5:])}</text>'
            )
        parts.append("</g>")
    parts.append("</svg>")
    return "".join(parts)


def _legend(entries: Iterable[tuple[str, str]]) -> str:
    spans = "".join(
        f'<span><i class="swatch" style="background:{colour}"></i>{esc(text)}</span>'
        for colour, text in entries
    )
    return f'<div class="legend meta">{spans}</div>'


def render_cleaner_history(rounds: Sequence[CleanerRound]) -> str:
    """The cleaner's rounds: bytes of the cleaned section read and written per round (the
    figures ``clean --once`` prints: Kafka's start and end size), then the figures, with the
    whole log's size (active segment included) in a column of its own."""
    if not rounds:
        return '<p class="meta">No cleaner rounds recorded.</p>'
    points = [
        (
            r.time_ms,
            [
                (r.bytes_read, BEFORE_COLOUR, f"read: {r.bytes_read} bytes"),
                (r.bytes_written, AFTER_COLOUR, f"written: {r.bytes_written} bytes"),
            ],
        )
        for r in rounds
    ]
    rows = [
        (
            format_time(r.time_ms),
            f"[{r.first_dirty_offset}, {r.end_offset})",
            r.bytes_read,
            r.bytes_written,
            f"{r.size_before_bytes} -> {r.size_after_bytes}",
            r.keys,
            f"{r.messages_read} -> {r.messages_written}",
            f"{r.duration_s:.3f}",
            "partial" if r.is_partial else "",
        )
        for r in rounds
    ]
    return (
        _legend([(BEFORE_COLOUR, "bytes read"), (AFTER_COLOUR, "bytes written")])
        + render_bar_chart("cleaner-chart", points)
        + _table(
            "history cleaner-history",
            (
                "time (UTC)",
                "dirty range",
                "bytes read",
                "bytes written",
                "log bytes",
                "keys",
                "records",
                "seconds",
                "",
            ),
            rows,
        )
    )


def render_compaction_history(runs: Sequence[CompactionRunRow]) -> str:
    """The compactor's runs: bytes read vs the copy's bytes per run, then the figures."""
    if not runs:
        return '<p class="meta">No compactor runs recorded.</p>'
    points = [
        (
            r.time_ms,
            [
                (r.bytes_before, BEFORE_COLOUR, f"read: {r.bytes_before} bytes"),
                (r.bytes_after, AFTER_COLOUR, f"copy: {r.bytes_after} bytes"),
            ],
        )
        for r in runs
    ]
    rows = [
        (
            format_time(r.time_ms),
            r.state + (" (no-op)" if r.is_noop else "") + (" (partial)" if r.is_partial else ""),
            r.horizon,
            r.bytes_before,
            r.bytes_after,
            r.keys,
            f"{r.records_read} -> {r.records_kept}",
            f"{r.duration_s:.3f}",
            r.error,
        )
        for r in runs
    ]
    return (
        _legend([(BEFORE_COLOUR, "bytes read"), (AFTER_COLOUR, "compacted copy bytes")])
        + render_bar_chart("compaction-chart", points)
        + _table(
            "history compaction-history",
            (
                "time (UTC)",
                "state",
                "horizon",
                "bytes read",
                "bytes written",
                "log bytes",
                "keys",
                "records",
                "seconds",
                "error",
            ),
            rows,
        )
    )


def retention_bars(event: RetentionEvent) -> list[tuple[int, str, str]]:
    """One bar per rule of a retention pass: (bytes that rule deleted, its colour, tooltip).

    Bytes come from the listed segments; bytes of segments the bounded history did not list
    (``segment_count`` above the list's length) get a grey bar of their own.
    """
    by_rule: dict[str, list[int]] = {rule: [] for rule in event.rules}
    for segment in event.segments:
        by_rule.setdefault(segment.rule, []).append(segment.size_bytes)
    bars = [
        (
            sum(sizes),
            RULE_COLOURS.get(rule, UNLISTED_COLOUR),
            f"{plural(len(sizes), 'segment')}, {plural(sum(sizes), 'byte')}: {rule}",
        )
        for rule, sizes in by_rule.items()
        if sizes
    ]
    unlisted = event.bytes - sum(size for size, _, _ in bars)
    if unlisted > 0 or not bars:
        count = event.segment_count - len(event.segments)
        bars.append(
            (
                unlisted,
                UNLISTED_COLOUR,
                f"{plural(count, 'segment')} not listed, {plural(unlisted, 'byte')}: "
                f"{', '.join(event.rules)}",
            )
        )
    return bars


def render_retention_history(events: Sequence[RetentionEvent]) -> str:
    """Retention deletions: per pass a bar of bytes freed per rule, then what and why."""
    if not events:
        return '<p class="meta">No retention deletions recorded.</p>'
    points = [(e.time_ms, retention_bars(e)) for e in events]
    rows = []
    for e in events:
        bases = ", ".join(str(s.base_offset) for s in e.segments)
        if e.segment_count > len(e.segments):
            bases += f", ... ({e.segment_count - len(e.segments)} more)"
        reasons = "; ".join(dict.fromkeys(s.reason for s in e.segments if s.reason))
        rows.append(
            (
                format_time(e.time_ms),
                e.segment_count,
                bases,
                e.bytes,
                ", ".join(e.rules),
                reasons,
                e.log_start_offset,
            )
        )
    return (
        _legend([(colour, rule) for rule, colour in RULE_COLOURS.items()])
        + render_bar_chart("retention-chart", points)
        + _table(
            "history retention-history",
            (
                "time (UTC)",
                "segments",
                "base offsets",
                "bytes",
                "rule",
                "why",
                "new log start offset",
            ),
            rows,
        )
    )


def render_partition(partition: PartitionReport) -> str:
    """One partition's section (module docstring)."""
    copy = partition.compacted_copy
    facts = [
        f"log start offset {partition.log_start_offset}",
        f"log end offset {partition.log_end_offset}",
        format_bytes(partition.size_bytes),
        plural(len(partition.segments), "segment"),
    ]
    if partition.cleaner_checkpoint is not None:
        facts.append(f"cleaner checkpoint {partition.cleaner_checkpoint}")
    if copy.horizon is not None:
        facts.append(f"compacted copy up to offset {copy.horizon}")
    if copy.state != "NOT_RUN":
        facts.append(f"compactor {copy.state}" + (f": {copy.message}" if copy.message else ""))
    parts = [
        f'<section class="partition" data-partition="{esc(partition.name)}">',
        f"<h3>{esc(partition.name)}</h3>",
        f'<p class="meta">{esc(" · ".join(facts))}<br>{esc(partition.directory)}</p>',
        "<h4>Segments</h4>",
        render_segments(partition),
    ]
    if partition.dirty is not None:
        parts += ["<h4>Dirty ratio</h4>", render_dirty_gauge(partition.dirty)]
    parts += [
        "<h4>Log cleaner rounds</h4>",
        render_cleaner_history(partition.cleaner_rounds),
        "<h4>Compactor runs (compacted copy)</h4>",
        render_compaction_history(partition.compaction_runs),
        "<h4>Retention deletions</h4>",
        render_retention_history(partition.retention_events),
        "</section>",
    ]
    return "".join(parts)


def render_topic(topic: TopicReport) -> str:
    """A topic: its configs, then its partitions."""
    return (
        f'<section class="topic" data-topic="{esc(topic.name)}">'
        f"<h2>Topic {esc(topic.name)}</h2>"
        + _table("configs", ("config", "value"), topic.configs)
        + "".join(render_partition(p) for p in topic.partitions)
        + "</section>"
    )


def render_report(report: Report) -> str:
    """The whole page (module docstring)."""
    legend = _legend((colour, text) for colour, text in SEGMENT_COLOURS.values())
    dirs = "".join(f"<li>{esc(d)}</li>" for d in report.data_dirs)
    names = ", ".join(t.name for t in report.topics) or "none"
    problems = ""
    if report.problems:
        items = "".join(f'<li class="problem">{esc(p)}</li>' for p in report.problems)
        problems = f"<h4>Problems</h4><ul>{items}</ul>"
    mode = "read-only" if report.is_read_only else "read-write"
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta http-equiv="Content-Security-Policy" '
        "content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        "<title>seglog report</title>"
        f"<style>{STYLE}</style></head><body>"
        "<h1>seglog report</h1>"
        f'<p class="meta">Generated {esc(format_time(report.generated_ms))} UTC by seglog '
        f"{esc(__version__)}; data dirs opened {esc(mode)}.</p>"
        f"<h4>Data dirs</h4><ul>{dirs}</ul>"
        f'<p class="meta">{plural(len(report.topics), "topic")}: {esc(names)}</p>'
        f"{problems}{legend}" + "".join(render_topic(t) for t in report.topics) + "</body></html>\n"
    )
