"""The trend part of the report: a few rows collected from the trend DataFrames, line charts as
standalone SVG (no scripts, no network, no plotting library) and the HTML section."""

from __future__ import annotations

import datetime as dt
import html
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .report import fmt, human_bytes, human_duration, table

Row = Mapping[str, Any]
COLOURS = ["#4a7ebb", "#e07b39", "#59a14f", "#b07aa1", "#edc948", "#76b7b2", "#ff9da7", "#9c755f"]
#: (chart name, series column, title, unit) of the three charts.
CHARTS = (
    ("trend_backlog", "backlog_bytes", "Backlog (slowest durable subscription) over time", "bytes"),
    ("trend_inflow", "inflow_bytes_per_s", "Inflow (bytes stored per second) over time", "bytes/s"),
    ("trend_time_to_breach", "time_to_breach_s", "Time to breach of the backlog quota over time", "s"),
)


def collect(summary: DataFrame, series: DataFrame, n: int = 8, table_rows: int = 25) -> dict[str, Any]:
    """The rows the report needs: the ``table_rows`` fastest-shrinking topics (or, when none
    shrinks, the largest backlogs), and the series of the first ``n`` of them."""
    ranked = summary.where(F.col("ttb_shrink_rank").isNotNull()).orderBy("ttb_shrink_rank")
    top = [r.asDict() for r in ranked.limit(table_rows).collect()]
    shrinking = bool(top)
    if not top:
        by_size = summary.orderBy(F.col("last_backlog_bytes").desc(), "broker", "topic")
        top = [r.asDict() for r in by_size.limit(table_rows).collect()]
    counts = summary.agg(F.count(F.lit(1)).alias("topics"), F.max("snapshots").alias("snapshots")).first()
    drawn = [(r["broker"], r["topic"]) for r in top[:n]]
    rows: list[dict[str, Any]] = []
    if drawn:
        keys = series.sparkSession.createDataFrame(drawn, "broker string, topic string")
        rows = [r.asDict() for r in series.join(keys, on=["broker", "topic"]).orderBy("snapshot_ms").collect()]
    return {
        "summary": top,
        "shrinking": shrinking,
        "series": rows,
        "drawn": drawn,
        "topics": int(counts["topics"] or 0),
        "snapshots": int(counts["snapshots"] or 0),
    }


def _axis_value(v: float, unit: str) -> str:
    if unit == "bytes":
        return human_bytes(v)
    if unit == "bytes/s":
        return human_bytes(v) + "/s"
    if unit == "s":
        return human_duration(v * 1000)
    return fmt(v)


def line_chart(
    lines: Sequence[tuple[str, Sequence[tuple[float, float]]]], title: str, unit: str, width: int = 900
) -> str:
    """Lines of ``(epoch ms, value)`` points as a standalone SVG document (legend at the right)."""
    head = (
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='300' role='img' "
        f"aria-label='{html.escape(title)}' font-size='11' font-family='sans-serif'>"
        f"<text x='0' y='14' font-weight='bold' font-size='13'>{html.escape(title)}</text>"
    )
    points = [p for _, pts in lines for p in pts]
    if not points:
        return head + "<text x='10' y='40'>(no data)</text></svg>"
    left, right, top, bottom = 80, width - 230, 30, 260
    x0, x1 = min(p[0] for p in points), max(p[0] for p in points)
    y0, y1 = min(0.0, min(p[1] for p in points)), max(p[1] for p in points)
    x1, y1 = (x1 if x1 > x0 else x0 + 1), (y1 if y1 > y0 else y0 + 1)

    def sx(x: float) -> float:
        return left + (right - left) * (x - x0) / (x1 - x0)

    def sy(y: float) -> float:
        return bottom - (bottom - top) * (y - y0) / (y1 - y0)

    parts = [head]
    for i in range(5):  # horizontal grid with values
        v = y0 + (y1 - y0) * i / 4
        parts.append(
            f"<line x1='{left}' x2='{right}' y1='{sy(v):.1f}' y2='{sy(v):.1f}' stroke='#ddd'/>"
            f"<text x='{left - 4}' y='{sy(v) + 4:.1f}' text-anchor='end'>{html.escape(_axis_value(v, unit))}</text>"
        )
    for i, x in enumerate((x0, (x0 + x1) / 2, x1)):  # time axis: start, middle, end (UTC)
        anchor = ("start", "middle", "end")[i]
        label = dt.datetime.fromtimestamp(x / 1000, dt.UTC).strftime("%H:%M:%S")
        parts.append(f"<text x='{sx(x):.1f}' y='{bottom + 16}' text-anchor='{anchor}'>{label}</text>")
    parts.append(f"<text x='{left}' y='{bottom + 32}'>snapshot time (UTC)</text>")
    for i, (label, pts) in enumerate(lines):
        colour = COLOURS[i % len(COLOURS)]
        if pts:
            path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in pts)
            parts.append(
                f"<polyline fill='none' stroke='{colour}' stroke-width='1.5' points='{path}'>"
                f"<title>{html.escape(label)}</title></polyline>"
            )
        short = label if len(label) <= 34 else "…" + label[-33:]
        y = top + 4 + i * 16
        parts.append(
            f"<rect x='{right + 12}' y='{y}' width='10' height='10' fill='{colour}'/>"
            f"<text x='{right + 26}' y='{y + 9}'><title>{html.escape(label)}</title>{html.escape(short)}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def charts(trend: Mapping[str, Any]) -> dict[str, str]:
    """The three trend charts (name → SVG document) over the drawn topics."""
    by_topic: dict[tuple[str, str], list[Row]] = {k: [] for k in trend["drawn"]}
    for r in trend["series"]:
        by_topic[(r["broker"], r["topic"])].append(r)
    out = {}
    for name, column, title, unit in CHARTS:
        lines = [
            (
                topic if len({b for b, _ in by_topic}) == 1 else f"{broker}: {topic}",
                [(float(r["snapshot_ms"]), float(r[column])) for r in rows if r[column] is not None],
            )
            for (broker, topic), rows in by_topic.items()
        ]
        out[name] = line_chart(lines, title, unit)
    return out


def section(trend: Mapping[str, Any] | None) -> str:
    """The report's trend section (charts inline)."""
    if trend is None:
        return ""
    what = (
        "the topics whose time to breach shrinks fastest"
        if trend["shrinking"]
        else "the largest backlogs (no topic's time to breach shrinks)"
    )
    out = [
        f"<h2>4. Trends over {fmt(trend['snapshots'])} snapshots</h2>",
        f"<p class='note'>{fmt(trend['topics'])} topics. Charts and table: {what}. Backlog = the slowest "
        "durable subscription's, as the broker's cursor counts it; time to breach = quota headroom / inflow "
        "at each snapshot; TTB slope = least-squares change of the time to breach per second of wall clock "
        "(-1: steady inflow; below -1: inflow accelerating). The series of every topic are in "
        "<code>trend_topics</code>, the per-topic summary in <code>trend_summary</code>.</p>",
        *charts(trend).values(),
        table(
            trend["summary"],
            [
                ("topic", "topic"),
                ("ttb_shrink_rank", "#"),
                ("snapshots", "snapshots"),
                ("first_backlog_bytes", "backlog first"),
                ("last_backlog_bytes", "backlog last"),
                ("backlog_slope_bytes_per_s", "backlog B/s"),
                ("mean_inflow_bytes_per_s", "mean inflow B/s"),
                ("quota_limit_bytes", "limit"),
                ("first_time_to_breach_s", "TTB first"),
                ("last_time_to_breach_s", "TTB last"),
                ("ttb_slope", "TTB slope"),
            ],
            limit=25,
        ),
    ]
    return "\n".join(out)
