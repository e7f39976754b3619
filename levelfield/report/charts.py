"""The report's charts, as inline SVG: each metric's mean by agent, and quality against cost."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._core.data.money import dollars
from .._core.data.textwidth import width
from .markup import _color, _esc, _fmt, _isnan

if TYPE_CHECKING:
    from ..comparison._comparison import Comparison

__all__: list[str] = []  # private parts of the report page: levelfield.report.html puts them together

_FONT_PX = 12
"""The charts' font size (style.css: ``.chart svg text``)."""
_COLUMN_PX = 7.5
"""A generous width of one text column at that size (a Chinese or Japanese character takes two)."""


def _text_px(text: str) -> float:
    """How wide ``text`` may show in a chart, at most: labels are placed so this much fits."""
    return width(text) * _COLUMN_PX


def _fit(text: str, px: float) -> str:
    """``text`` shortened with "…" to fit ``px`` pixels of a chart (the full text on hover)."""
    if _text_px(text) <= px:
        return text
    while text and _text_px(text + "…") > px:
        text = text[:-1]
    return text + "…"


def _cost_chart(cmp: Comparison, metric: str) -> str:
    """Each agent a point: cost per run across, the metric's mean up, whiskers for both intervals."""
    s = cmp.summary
    known = [a for a in cmp.agents if not _isnan(s.loc[a, "cost_usd/mean"]) and not _isnan(s.loc[a, f"{metric}/mean"])]
    if not known:
        return ""
    left, plot_w, plot_h, top, bottom = 56, 340, 200, 10, 34
    width, height = left + plot_w + 130, top + plot_h + bottom
    costs = [float(s.loc[a, key]) for a in known for key in ("cost_usd/mean", "cost_usd/ci_high") if not _isnan(s.loc[a, key])]
    hi_x = max(costs) * 1.1 or 1.0
    scores = [float(s.loc[a, f"{metric}/{c}"]) for a in known for c in ("mean", "ci_low", "ci_high")
              if not _isnan(s.loc[a, f"{metric}/{c}"])]
    lo_y, hi_y = min([0.0, *scores]), max([1.0, *scores])
    span_y = hi_y - lo_y or 1.0

    def x(v: float) -> float:
        return left + float(v) / hi_x * plot_w

    def y(v: float) -> float:
        return top + plot_h - (float(v) - lo_y) / span_y * plot_h

    parts = [
        f'<svg class="scatter" role="img" aria-label="{_esc(metric)} against cost per run" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">'
    ]
    for i in range(5):
        tx, ty = x(hi_x * i / 4), y(lo_y + span_y * i / 4)
        parts.append(f'<line class="grid" x1="{tx:.1f}" y1="{top}" x2="{tx:.1f}" y2="{top + plot_h}"/>')
        parts.append(f'<text x="{tx:.1f}" y="{top + plot_h + 14}" text-anchor="middle">{dollars(hi_x * i / 4)}</text>')
        parts.append(f'<line class="grid" x1="{left}" y1="{ty:.1f}" x2="{left + plot_w}" y2="{ty:.1f}"/>')
        parts.append(f'<text x="{left - 6}" y="{ty + 4:.1f}" text-anchor="end">{lo_y + span_y * i / 4:.2g}</text>')
    parts.append(f'<line class="axis" x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}"/>')
    parts.append(f'<line class="axis" x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}"/>')
    parts.append(f'<text x="{left + plot_w / 2:.1f}" y="{height - 4}" text-anchor="middle">cost per run ($)</text>')
    for agent in known:
        row = s.loc[agent]
        cx, cy = x(row["cost_usd/mean"]), y(row[f"{metric}/mean"])
        color = _color(cmp, agent)
        if not (_isnan(row.get("cost_usd/ci_low")) or _isnan(row.get("cost_usd/ci_high"))):
            parts.append(f'<line class="whisker" x1="{x(row["cost_usd/ci_low"]):.1f}" y1="{cy:.1f}" '
                         f'x2="{x(row["cost_usd/ci_high"]):.1f}" y2="{cy:.1f}" style="stroke:{color}"/>')
        if not (_isnan(row[f"{metric}/ci_low"]) or _isnan(row[f"{metric}/ci_high"])):
            parts.append(f'<line class="whisker" x1="{cx:.1f}" y1="{y(row[f"{metric}/ci_low"]):.1f}" '
                         f'x2="{cx:.1f}" y2="{y(row[f"{metric}/ci_high"]):.1f}" style="stroke:{color}"/>')
        tip = (f"{agent}: {metric} {_fmt(row[f'{metric}/mean'])} [{_fmt(row[f'{metric}/ci_low'])}, "
               f"{_fmt(row[f'{metric}/ci_high'])}]; {dollars(row['cost_usd/mean'])} per run")
        name = _fit(agent, 130)
        # Right of the point and above it, unless that runs past the right edge or above the top.
        tx, anchor = (cx + 8, "start") if cx + 8 + _text_px(name) <= width - 2 else (cx - 8, "end")
        ty = cy - 6 if cy - 6 - _FONT_PX >= 0 else cy + 6 + _FONT_PX
        parts.append(f'<circle class="point" cx="{cx:.1f}" cy="{cy:.1f}" r="5" fill="{color}"><title>{_esc(tip)}</title></circle>'
                     f'<text x="{tx:.1f}" y="{ty:.1f}" text-anchor="{anchor}">{_esc(name)}</text>')
    parts.append("</svg>")
    return f'<div class="chart" data-metric="{_esc(metric)}" data-chart="cost"><h3>{_esc(metric)}</h3>{"".join(parts)}</div>'


def _cost_section(cmp: Comparison) -> str:
    """Quality against cost, one chart per metric, when some agent's cost is known."""
    s = cmp.summary
    if "cost_usd/mean" not in s or s["cost_usd/mean"].isna().all():
        return ""
    charts = "".join(_cost_chart(cmp, m) for m in cmp.metric_names)
    unknown = [f"{_esc(a)}: {_esc(s.loc[a].get('cost_usd/note') or 'no usage reported')}"
               for a in cmp.agents if _isnan(s.loc[a, "cost_usd/mean"])]
    note = f'<p class="muted">Cost unknown, not shown: {"; ".join(unknown)}.</p>' if unknown else ""
    return (
        f'<section id="cost"><h2>Quality and cost</h2><p class="muted">Each agent at its mean cost per run (across) '
        f'and mean score (up); whiskers show the {int(cmp.confidence * 100)}% intervals of both. Up and to the left '
        f'is better.</p>{note}<div class="charts">{charts}</div></section>'
    )


def _chart(cmp: Comparison, metric: str) -> str:
    s = cmp.summary
    label_w, plot_w, row_h, top = 150, 300, 26, 8
    n = len(cmp.agents)
    height = top + n * row_h + 24
    values = [s.loc[a, f"{metric}/{c}"] for a in cmp.agents for c in ("mean", "ci_low", "ci_high")]
    finite = [float(v) for v in values if not _isnan(v)]
    lo = min([0.0, *finite])
    hi = max([1.0, *finite])
    span = hi - lo or 1.0

    def x(v: float) -> float:
        return label_w + (float(v) - lo) / span * plot_w

    parts = [
        f'<svg class="bars" role="img" aria-label="{_esc(metric)} by agent" width="{label_w + plot_w + 60}" '
        f'height="{height}" viewBox="0 0 {label_w + plot_w + 60} {height}" xmlns="http://www.w3.org/2000/svg">'
    ]
    for i in range(5):
        tick = lo + span * i / 4
        tx = x(tick)
        parts.append(f'<line class="grid" x1="{tx:.1f}" y1="{top}" x2="{tx:.1f}" y2="{top + n * row_h}"/>')
        parts.append(f'<text x="{tx:.1f}" y="{height - 6}" text-anchor="middle">{tick:.2g}</text>')
    parts.append(f'<line class="axis" x1="{x(lo):.1f}" y1="{top}" x2="{x(lo):.1f}" y2="{top + n * row_h}"/>')
    for i, agent in enumerate(cmp.agents):
        y = top + i * row_h
        mean, low, high = (s.loc[agent, f"{metric}/{c}"] for c in ("mean", "ci_low", "ci_high"))
        name = _fit(agent, label_w - 10)
        parts.append(f'<text x="{label_w - 8}" y="{y + row_h / 2 + 4:.1f}" text-anchor="end"><title>{_esc(agent)}</title>'
                     f'{_esc(name)}</text>')
        if _isnan(mean):
            parts.append(f'<text x="{label_w + 4}" y="{y + row_h / 2 + 4:.1f}" class="muted">no scores</text>')
            continue
        bar_x, bar_w = min(x(0 if lo <= 0 else lo), x(mean)), abs(x(mean) - x(0 if lo <= 0 else lo))
        tip = f"{agent}: {_fmt(mean)} [{_fmt(low)}, {_fmt(high)}]"
        parts.append(
            f'<rect class="bar" x="{bar_x:.1f}" y="{y + 5}" width="{max(bar_w, 1):.1f}" height="{row_h - 10}" '
            f'fill="{_color(cmp, agent)}" fill-opacity="0.75"><title>{_esc(tip)}</title></rect>'
        )
        if not (_isnan(low) or _isnan(high)):
            cy = y + row_h / 2
            parts.append(
                f'<line class="whisker" x1="{x(low):.1f}" y1="{cy:.1f}" x2="{x(high):.1f}" y2="{cy:.1f}"/>'
                f'<line class="whisker" x1="{x(low):.1f}" y1="{cy - 5:.1f}" x2="{x(low):.1f}" y2="{cy + 5:.1f}"/>'
                f'<line class="whisker" x1="{x(high):.1f}" y1="{cy - 5:.1f}" x2="{x(high):.1f}" y2="{cy + 5:.1f}"/>'
            )
        end = max(x(mean), x(high) if not _isnan(high) else x(mean))
        parts.append(f'<text x="{end + 6:.1f}" y="{y + row_h / 2 + 4:.1f}">{_fmt(mean, 2)}</text>')
    parts.append("</svg>")
    return f'<div class="chart" data-metric="{_esc(metric)}"><h3>{_esc(metric)}</h3>{"".join(parts)}</div>'


def _charts_section(cmp: Comparison) -> str:
    charts = "".join(_chart(cmp, m) for m in cmp.metric_names)
    return (
        f'<section id="charts"><h2>Metrics</h2><p class="muted">Mean per agent; whiskers show the '
        f'{int(cmp.confidence * 100)}% interval.</p><div class="charts">{charts}</div></section>'
    )
