"""``report.html``: one self-contained page (inline SVG charts, no scripts) over all three jobs."""

from __future__ import annotations

import datetime as dt
import html
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

Row = Mapping[str, Any]

_CSS = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1200px}
h1{font-size:1.6em}h2{margin-top:2em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}
th,td{border:1px solid #ddd;padding:3px 6px;text-align:right}th{background:#f3f3f3}
td.l,th.l{text-align:left}tr.bad td{background:#fde2e2}
.cards{display:flex;gap:1em;flex-wrap:wrap}.card{border:1px solid #ddd;border-radius:6px;padding:.6em 1em}
.card b{display:block;font-size:1.4em}.note{color:#666;font-size:.85em}
"""


def fmt(v: Any) -> str:
    """A cell value for people: thousands separators, short floats, byte units left to callers."""
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if math.isnan(v):
            return "-"
        return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"
    return str(v)


def human_bytes(n: float | None) -> str:
    if n is None:
        return "-"
    sign, n = ("-" if n < 0 else ""), abs(float(n))
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{sign}{n:.0f} {unit}" if unit == "B" else f"{sign}{n:.1f} {unit}"
        n /= 1024
    return f"{sign}{n}"  # unreachable


def human_duration(ms: float | None) -> str:
    if ms is None:
        return "-"
    s = float(ms) / 1000
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if abs(s) >= size:
            return f"{s / size:.1f} {unit}"
    return f"{s:.1f} s"


def table(rows: Sequence[Row], columns: Sequence[tuple[str, str]], limit: int = 50, bad: str | None = None) -> str:
    """An HTML table of ``rows``; ``columns`` = (key, title); text columns are left-aligned."""
    head = "".join(
        f"<th class='l'>{html.escape(t)}</th>" if i < 1 else f"<th>{html.escape(t)}</th>"
        for i, (_, t) in enumerate(columns)
    )
    body = []
    for r in rows[:limit]:
        cells = []
        for key, _ in columns:
            v = r.get(key)
            if key.endswith("_bytes_per_s") and isinstance(v, int | float):
                text = human_bytes(v) + "/s"
            elif key.endswith("_bytes") and isinstance(v, int | float):
                text = human_bytes(v)
            elif key.endswith("_ms") and "age" in key and isinstance(v, int | float):
                text = human_duration(v)
            elif key.endswith("_s") and isinstance(v, int | float):
                text = human_duration(v * 1000)
            else:
                text = fmt(v)
            cls = " class='l'" if isinstance(v, str) else ""
            cells.append(f"<td{cls}>{html.escape(text)}</td>")
        tr = " class='bad'" if bad and r.get(bad) is False else ""
        body.append(f"<tr{tr}>{''.join(cells)}</tr>")
    more = f"<p class='note'>{len(rows) - limit:,} more rows in the Parquet output.</p>" if len(rows) > limit else ""
    return f"<table><tr>{head}</tr>{''.join(body)}</table>{more}"


def bar_chart(items: Sequence[tuple[str, float]], title: str, unit: str = "", width: int = 900) -> str:
    """A horizontal bar chart as inline SVG (labels left, values right)."""
    if not items:
        return "<p class='note'>(nothing to plot)</p>"
    bar_h, gap, label_w, value_w = 18, 4, 330, 110
    h = len(items) * (bar_h + gap) + 30
    top = max(max(v for _, v in items), 1e-9)
    plot_w = width - label_w - value_w
    parts = [
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{h}' role='img' "
        f"aria-label='{html.escape(title)}' font-size='12' font-family='sans-serif'>",
        f"<text x='0' y='14' font-weight='bold'>{html.escape(title)}</text>",
    ]
    for i, (label, v) in enumerate(items):
        y = 24 + i * (bar_h + gap)
        w = max(1.0, plot_w * max(v, 0) / top)
        short = label if len(label) <= 48 else "…" + label[-47:]
        shown = human_bytes(v) if unit == "bytes" else fmt(v) + (f" {unit}" if unit else "")
        parts.append(
            f"<text x='{label_w - 6}' y='{y + 13}' text-anchor='end'><title>{html.escape(label)}</title>"
            f"{html.escape(short)}</text>"
            f"<rect x='{label_w}' y='{y}' width='{w:.1f}' height='{bar_h}' fill='#4a7ebb'/>"
            f"<text x='{label_w + w + 4:.1f}' y='{y + 13}'>{html.escape(shown)}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def histogram_chart(rows: Iterable[Row], title: str) -> str:
    """Grouped columns: topics per backlog-size decade, one colour per subscription name."""
    rows = list(rows)
    if not rows:
        return "<p class='note'>(nothing to plot)</p>"
    subs = sorted({r["subscription"] for r in rows})[:8]
    buckets = sorted({int(r["bucket"]) for r in rows})
    counts = {(r["subscription"], int(r["bucket"])): int(r["topics"]) for r in rows}
    top = max(counts.values())
    colours = ["#4a7ebb", "#e07b39", "#59a14f", "#b07aa1", "#edc948", "#76b7b2", "#ff9da7", "#9c755f"]
    group_w, height, base = 90, 220, 190
    width = max(400, 60 + len(buckets) * group_w + 180)
    bw = (group_w - 10) / max(len(subs), 1)
    parts = [
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height + 30}' role='img' "
        f"aria-label='{html.escape(title)}' font-size='11' font-family='sans-serif'>",
        f"<text x='0' y='14' font-weight='bold'>{html.escape(title)}</text>",
    ]
    for bi, b in enumerate(buckets):
        x0 = 50 + bi * group_w
        label = "0" if b == 0 else f"≥{10 ** (b - 1):,}"
        parts.append(f"<text x='{x0 + group_w / 2 - 5:.0f}' y='{base + 16}' text-anchor='middle'>{label}</text>")
        for si, s in enumerate(subs):
            c = counts.get((s, b), 0)
            h = (base - 30) * c / top
            parts.append(
                f"<rect x='{x0 + si * bw:.1f}' y='{base - h:.1f}' width='{bw - 1:.1f}' height='{h:.1f}' "
                f"fill='{colours[si % len(colours)]}'><title>{html.escape(s)}: {c} topics</title></rect>"
            )
    parts.append(f"<text x='50' y='{base + 32}'>backlog entries (decade buckets) → topics per bucket</text>")
    for si, s in enumerate(subs):
        y = 30 + si * 16
        parts.append(
            f"<rect x='{width - 170}' y='{y}' width='10' height='10' fill='{colours[si % len(colours)]}'/>"
            f"<text x='{width - 155}' y='{y + 9}'>{html.escape(s[:24])}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def render(
    results: Mapping[str, Sequence[Row]],
    selected: Sequence[tuple[str, int]],
    input_path: str,
    quota_bytes: int | None,
    top_n: int,
    trend_section: str = "",
) -> str:
    """The report page from collected result rows (``backlog``, ``topic_quota``, ``hot_keys``,
    ``lag_percentiles``, ``lag_histogram``, ``consumer_lag``), then ``trend_section`` (HTML)."""
    backlog = sorted(results["backlog"], key=lambda r: (-(r["backlog_bytes"] or 0), r["topic"], r["subscription"]))
    quota = list(results["topic_quota"])
    hot = list(results["hot_keys"])
    mismatched = [r for r in backlog if r["matches_broker"] is False]
    total = {k: sum((r[k] or 0) for r in backlog) for k in ("backlog_entries", "backlog_messages", "backlog_bytes")}
    snaps = ", ".join(
        f"{b} @ {dt.datetime.fromtimestamp(ms / 1000, dt.UTC):%Y-%m-%d %H:%M:%S} UTC ({ms})" for b, ms in selected
    )
    cards = [
        ("snapshots", fmt(len(selected))),
        ("topics", fmt(len({(r["broker"], r["snapshot_ms"], r["topic"]) for r in quota}))),
        ("subscriptions", fmt(len(backlog))),
        ("backlog entries", fmt(total["backlog_entries"])),
        ("backlog messages", fmt(total["backlog_messages"])),
        ("backlog bytes", human_bytes(total["backlog_bytes"])),
        ("mismatches vs broker", fmt(len(mismatched))),
    ]
    out = [
        "<!doctype html><html><head><meta charset='utf-8'><title>pulsar_rs backlog report</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>pulsar_rs backlog report</h1>",
        f"<p class='note'>Input <code>{html.escape(input_path)}</code>; snapshots: {html.escape(snaps)}.</p>",
        "<div class='cards'>",
        *(f"<div class='card'>{html.escape(t)}<b>{html.escape(v)}</b></div>" for t, v in cards),
        "</div>",
        "<h2>1. Backlog per topic and subscription</h2>",
        "<p class='note'>Backlog = entries after the mark-delete position not inside an acknowledged range; "
        "<i>broker</i> is the cursor's own count (<code>msgBacklog</code>); rows where they differ are red. "
        "Ack ranges per 1k backlog entries measures ack-hole fragmentation.</p>",
        bar_chart(
            [(f"{r['topic']} / {r['subscription']}", float(r["backlog_bytes"] or 0)) for r in backlog[:25]],
            "Largest backlogs (bytes)",
            unit="bytes",
        ),
        table(
            backlog,
            [
                ("topic", "topic"),
                ("subscription", "subscription"),
                ("backlog_entries", "entries"),
                ("broker_backlog_entries", "broker"),
                ("backlog_messages", "messages"),
                ("backlog_bytes", "bytes"),
                ("oldest_unacked_age_ms", "oldest unacked"),
                ("ack_ranges", "ack ranges"),
                ("ack_ranges_per_1k_backlog", "ranges /1k"),
                ("acked_fraction", "acked frac."),
                ("matches_broker", "= broker"),
            ],
            limit=200,
            bad="matches_broker",
        ),
        "<h2>Backlog quota</h2>",
        f"<p class='note'>Limit: the topic's backlog quota, else the default "
        f"{html.escape(human_bytes(quota_bytes) if quota_bytes is not None else '(none)')}. "
        "Time to breach = headroom / inflow (bytes stored per second since the previous snapshot).</p>",
    ]
    at_risk = sorted(
        (r for r in quota if r["quota_limit_bytes"] is not None),
        key=lambda r: (r["time_to_breach_s"] is None, r["time_to_breach_s"] or 0, r["quota_headroom_bytes"] or 0),
    )
    out.append(
        bar_chart(
            [(r["topic"], float(r["topic_backlog_bytes"] or 0)) for r in at_risk[:25]],
            "Topic backlog (slowest subscription) of the topics closest to their quota",
            unit="bytes",
        )
    )
    out.append(
        table(
            at_risk or quota,
            [
                ("topic", "topic"),
                ("slowest_subscription", "slowest subscription"),
                ("topic_backlog_bytes", "backlog"),
                ("quota_limit_bytes", "limit"),
                ("quota_headroom_bytes", "headroom"),
                ("inflow_bytes_per_s", "inflow B/s"),
                ("time_to_breach_s", "time to breach"),
            ],
            limit=100,
        )
    )
    out.append(f"<h2>2. Hottest keys in backlog (top {top_n} per topic)</h2>")
    hottest = sorted(hot, key=lambda r: -(r["backlog_messages"] or 0))
    out.append(
        bar_chart(
            [(f"{r['topic']} / {r['key']}", float(r["backlog_messages"] or 0)) for r in hottest[:25]],
            "Hottest keys overall (backlog messages, summed over subscriptions)",
            unit="msgs",
        )
    )
    hot_sorted = sorted(hot, key=lambda r: (r["topic"], r["rank"]))
    out.append(
        table(
            hot_sorted,
            [
                ("topic", "topic"),
                ("rank", "#"),
                ("key", "key"),
                ("key_hash", "key hash"),
                ("backlog_messages", "messages"),
                ("backlog_entries", "entries"),
                ("backlog_bytes", "bytes"),
                ("subscriptions", "subs"),
                ("share_of_keyed_backlog", "share"),
            ],
            limit=200,
        )
    )
    out.append("<h2>3. Consumer lag distribution</h2>")
    out.append(histogram_chart(results["lag_histogram"], "Topics per backlog size, by subscription name"))
    out.append(
        table(
            sorted(results["lag_percentiles"], key=lambda r: -(r["total_backlog_entries"] or 0)),
            [
                ("subscription", "subscription"),
                ("topics", "topics"),
                ("total_backlog_entries", "total entries"),
                ("p50_backlog_entries", "p50"),
                ("p90_backlog_entries", "p90"),
                ("p99_backlog_entries", "p99"),
                ("max_backlog_entries", "max"),
                ("p50_oldest_unacked_age_ms", "p50 age"),
                ("max_oldest_unacked_age_ms", "max age"),
            ],
            limit=100,
        )
    )
    consumers = sorted(results["consumer_lag"], key=lambda r: -(r["unacked_messages"] or 0))
    out.append("<h3>Consumers</h3>")
    if consumers:
        out.append(
            bar_chart(
                [
                    (f"{r['topic']} / {r['subscription']} / {r['consumer_name']}", float(r["unacked_messages"] or 0))
                    for r in consumers[:25]
                ],
                "Unacknowledged messages per consumer",
                unit="msgs",
            )
        )
        out.append(
            table(
                consumers,
                [
                    ("topic", "topic"),
                    ("subscription", "subscription"),
                    ("consumer_name", "consumer"),
                    ("unacked_messages", "unacked"),
                    ("available_permits", "permits"),
                    ("blocked", "blocked"),
                    ("msg_rate_out", "msg/s out"),
                    ("subscription_backlog_entries", "sub backlog"),
                    ("share_of_subscription_unacked", "share"),
                ],
                limit=100,
            )
        )
    else:
        out.append("<p class='note'>No consumers in these snapshots (offline exports have none).</p>")
    out.append(trend_section)
    out.append("</body></html>")
    return "\n".join(out)
