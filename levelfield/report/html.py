"""The HTML report of a comparison: one self-contained file, charts as inline SVG.

Everything is rendered here, in Python, into static markup; the small inline script only
filters and expands cases. Every string that came from an agent, a dataset or a user (names,
prompts, responses, tool calls, errors) goes through ``html.escape``, and a Content-Security-
Policy allows no network and no script but the report's own (by hash), so a response that
holds ``<script>`` shows as text and could not run even if it slipped through. Bidirectional
override characters are shown as visible ``[U+202E]`` marks, so an agent cannot make its output
(or a name) read as something else. Texts longer than ``TEXT_LIMIT`` characters are shortened,
with their full length shown: a 10 MB response must not make a 10 MB page.
"""

from __future__ import annotations

import base64
import datetime as _dt
import hashlib
import html
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._core.data.jsonsafe import to_jsonable
from .._core.data.money import dollars
from .._core.data.textwidth import width
from .._core.results.writing import write_text
from .._core.score.metrics.base import FAILED_AS_ZERO, FAILED_LEFT_OUT
from ..comparison_text import evaluator_lines
from ..failure_summary import failure_groups
from ..verdict import early_stop_line, failure_rule, other_rule, verdict
from .changes import baseline_section
from .glossary import describe_metric
from .judges import judge_section

if TYPE_CHECKING:
    from .._core.score.diff import MarkedCall
    from ..comparison import AgentCase, Comparison

__all__ = ["render", "write", "report_sections", "asset", "TEXT_LIMIT",
           "escape", "breakable", "long_text", "score_chip", "number", "call_text", "in_reference_order", "agent_color_of"]

TEXT_LIMIT = 20_000
"""Characters of a prompt, response or error shown before it is shortened."""

# Bidi embeddings, overrides and isolates (and the Arabic letter mark): they reorder what follows.
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")

_PALETTE = ("#3b6fb6", "#e07b39", "#3a9a5b", "#9b59b6", "#c0392b", "#16a2b8", "#7f8c8d", "#b7950b")


def _esc(value: Any) -> str:
    text = "" if value is None else str(value)
    text = _BIDI.sub(lambda m: f"[U+{ord(m.group()):04X}]", text)
    return html.escape(text, quote=True)


def _long(value: Any, limit: int = TEXT_LIMIT) -> str:
    """Escaped text, shortened past ``limit`` characters with a note giving its full length."""
    text = "" if value is None else str(value)
    if len(text) <= limit:
        return _esc(text)
    return (
        f'{_esc(text[:limit])}<span class="cut">… shortened: {len(text):,} characters in full '
        "(see runs.jsonl)</span>"
    )


def _short(value: Any, limit: int = 300) -> str:
    """A one-line preview, for summaries and search attributes."""
    text = "" if value is None else str(value)
    return text if len(text) <= limit else text[:limit] + "…"


def _isnan(x: Any) -> bool:
    try:
        return x is None or math.isnan(float(x))
    except (TypeError, ValueError):
        return True


def _fmt(x: Any, digits: int = 3) -> str:
    return "–" if _isnan(x) else f"{float(x):.{digits}f}"


def _fmt_p(p: Any) -> str:
    if _isnan(p):
        return "–"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def _chip(value: float, label: str = "", *, name: str = "") -> str:
    """A score badge coloured by the score; ``label`` on hover, ``name`` (its metric) shown in it."""
    if _isnan(value):
        cls, text = "na", "–"
    else:
        cls = "good" if value >= 0.999 else "bad" if value <= 0.001 else "mid"
        text = _fmt(value, 2)
    title = f' title="{_esc(label)}"' if label else ""
    shown = f'<span class="bname">{_esc(name)}</span> ' if name else ""
    return f'<span class="chip {cls}"{title}>{shown}{_esc(text)}</span>'


def _table(headers: Iterable[tuple[str, bool]], rows: Iterable[Iterable[str]], cls: str = "") -> str:
    """``headers``: (label, numeric); ``rows``: cells already escaped."""
    headers = list(headers)
    head = "".join(f'<th{" class=num" if num else ""}>{_breakable(h)}</th>' for h, num in headers)
    body = []
    for row in rows:
        cells = "".join(
            f'<td{" class=num" if headers[i][1] else ""}>{cell}</td>' for i, cell in enumerate(row)
        )
        body.append(f"<tr>{cells}</tr>")
    return (
        f'<div class="tablewrap"><table class="{cls}"><thead><tr>{head}</tr></thead>'
        f'<tbody>{"".join(body)}</tbody></table></div>'
    )


def _breakable(name: Any) -> str:
    """An escaped name a narrow column may wrap after ``_``, ``.`` or ``/`` (as after a hyphen), never inside a word."""
    return re.sub(r"([_./])", r"\1<wbr>", _esc(name))


def _metric_link(metric: str) -> str:
    return f'<a class="metric" href="#glossary-{_esc(metric)}" title="what this metric means">{_breakable(metric)}</a>'


# -- sections ------------------------------------------------------------------------------


def _evaluators_note(cmp: Comparison) -> str:
    """The label of a comparison made across different evaluators (``allow_different_evaluators=True``), or ""."""
    lines = evaluator_lines(cmp)
    if not lines:
        return ""
    items = "".join(f"<li>{_esc(line)}</li>" for line in lines)
    return f'<div class="policy evaluators"><p><b>Scores from different evaluators.</b></p><ul>{items}</ul></div>'


def _policy_note(cmp: Comparison) -> str:
    """How to read the numbers, in plain words first; how they are computed behind a click."""
    failures = int(cmp.summary["failures"].sum()) if len(cmp.summary) else 0
    level = int(round(cmp.confidence * 100))
    count = f'<span class="{"fail" if failures else ""}">{failures} failed run{"s" if failures != 1 else ""}</span>'
    if cmp.failed_runs == "zero":
        rule = ("a run that crashed, timed out or gave an unreadable answer scores <b>0</b>, so an agent "
                "cannot rank higher by failing on hard cases")
    else:
        rule = "a run that crashed, timed out or gave an unreadable answer is <b>left out</b> of the scores"
    reducer = cmp.reducer
    trials = "averaged" if reducer == "mean" else f"reduced by their {_esc(reducer)}"
    return (
        f'<div class="policy"><p><b>How to read this.</b> Each score is an average over the cases, from 0 to 1; '
        f"higher is better. The range in brackets is where the agent's true score most likely lies "
        f"({level}% of the time). A difference is called <b>significant</b> when it is too large to be luck. "
        f"{count} in total: {_esc(failure_rule(cmp.failed_runs))} — {rule}.</p>{_not_started_note(cmp)}"
        '<details><summary>How the numbers are computed</summary><p>'
        f"Ranges: Wilson intervals for pass/fail scores, bootstrap (BCa) otherwise; trials are {trials} per case "
        "first. Two agents are compared case by case: exact McNemar test for pass/fail scores, Wilcoxon "
        "signed-rank otherwise. With several agents, a pair that could not be significant whatever its scores "
        "(for instance two agents with the same score on every case) is left out of the multiple-comparison "
        "adjustment (Tarone, Biometrics 1990); Holm's adjustment runs over the pairs that are left, and the "
        "pairwise ranges are widened to match (Bonferroni over the same pairs). "
        f"When a run failed, the summary also gives each mean with {_esc(other_rule(cmp.failed_runs))}.</p>"
        "</details></div>"
    )


def _not_started_note(cmp: Comparison) -> str:
    """Runs a spending limit kept from starting: the report covers only the runs that ran."""
    missing = getattr(cmp, "not_started", None) or []
    if not missing:
        return ""
    limit = getattr(cmp.config, "max_cost_usd", None)
    spent = f" (max_cost_usd={limit:g})" if limit is not None else ""
    budget = getattr(cmp, "budget", None)
    per_agent = ""
    if budget is not None:
        items = "".join(f"<li>{_esc(line)}</li>" for line in budget.agent_lines())
        per_agent = f"<p>{_esc(budget.headline())}:</p><ul>{items}</ul>"
    return (f'<p class="fail">{len(missing)} planned run{"s were" if len(missing) != 1 else " was"} not started: the '
            f"spending limit{_esc(spent)} was reached. Resume with a larger limit to finish them.</p>{per_agent}")


def _summary_section(cmp: Comparison) -> str:
    # Metrics as rows and agents as columns: reads well with many metrics, like the CLI's table.
    s = cmp.summary
    k = cmp.trials
    rows = []
    other = FAILED_LEFT_OUT if cmp.failed_runs == "zero" else FAILED_AS_ZERO
    any_failed = int(s["failures"].sum()) > 0
    for m in cmp.metric_names:
        cells = [f"<b>{_metric_link(m)}</b>"]
        for agent in cmp.agents:
            r = s.loc[agent]
            cells.append(
                f'{_fmt(r[f"{m}/mean"])} <span class="ci">[{_fmt(r[f"{m}/ci_low"])}, {_fmt(r[f"{m}/ci_high"])}]</span>'
            )
        rows.append(cells)
        if any_failed and f"{m}/{other}" in s:
            rows.append([f'<span class="sub">{_esc(other_rule(cmp.failed_runs))}</span>',
                         *(f'<span class="ci">{_fmt(s.loc[a, f"{m}/{other}"])}</span>' for a in cmp.agents)])
    fails = ["failed runs"]
    for agent in cmp.agents:
        n = int(s.loc[agent, "failures"])
        fails.append(f'<span class="{"fail" if n else ""}">{n}</span> <span class="ci">of {int(s.loc[agent, "runs"])}</span>')
    rows.append(fails)
    rows.append(["latency p50 (s)", *(_fmt(s.loc[a, "latency_in_seconds/p50"]) for a in cmp.agents)])
    rows.append(["latency p95 (s)", *(_fmt(s.loc[a, "latency_in_seconds/p95"]) for a in cmp.agents)])
    if "total_tokens/mean" in s:
        rows.append(["tokens per run", *(_fmt(s.loc[a, "total_tokens/mean"], 0) for a in cmp.agents)])
    if "cache_share" in s:  # the share of prompt tokens the provider read from its cache (billed at a discount)
        rows.append(["prompt read from cache", *("-" if _isnan(s.loc[a, "cache_share"]) else f'{s.loc[a, "cache_share"]:.0%}'
                                                 for a in cmp.agents)])
    if "cost_usd/mean" in s:
        rows.append(["cost per run ($)", *(_cost_cell(s.loc[a]) for a in cmp.agents)])
        rows.append(["cost in all ($)", *(_usd(s.loc[a, "cost_usd/sum"]) for a in cmp.agents)])
    head_cells = "".join(
        f'<th class=num><span style="color:{_color(cmp, a)}">■</span> {_breakable(a)}</th>' for a in cmp.agents
    )
    body = "".join(
        "<tr>" + "".join(f'<td{" class=num" if i else ""}>{c}</td>' for i, c in enumerate(r)) + "</tr>" for r in rows
    )
    table = (
        f'<div class="tablewrap"><table class="summary"><thead><tr><th></th>{head_cells}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )
    over = cmp.rests_on() or f"{len(cmp.dataset)} cases"  # what the numbers rest on: the same words as print(cmp)
    out = [f'<section id="summary"><h2>Summary</h2><p class="muted">Mean [{int(cmp.confidence * 100)}% interval] over '
           f'{_esc(over)}; {_esc(failure_rule(cmp.failed_runs))}.</p>', table]
    reliability = [m for m in cmp.metric_names if f"{m}/pass@{k}" in s] or cmp.metric_names[:1]
    if k > 1 and reliability:
        # Agents as columns, like the summary: three columns per metric overflowed with a few metrics.
        rh: list[tuple[str, bool]] = [("", False), *((a, True) for a in cmp.agents)]
        rrows = []
        for m in reliability:
            for label, key, digits in ((f"pass@{k}", f"{m}/pass@{k}", 3), (f"pass^{k}", f"{m}/pass^{k}", 3),
                                       ("flaky cases", f"{m}/flaky", 0)):
                head = f"<b>{_metric_link(m)}</b> {label}" if label == f"pass@{k}" else f'<span class="sub">{label}</span>'
                rrows.append([head, *(_fmt(s.loc[a].get(key), digits) for a in cmp.agents)])
        out.append(
            f"<h3>Reliability over {k} trials</h3><p class=muted>pass@{k}: the share of cases solved in at least one "
            f"of {k} trials; pass^{k}: in all {k}; flaky: cases whose trials disagree.</p>"
        )
        out.append(_table(rh, rrows, "reliability"))
    out.append("</section>")
    return "".join(out)


def _usd(x: Any) -> str:
    """Dollars in a column headed "($)": plain decimals (:func:`dollars`), "unknown" for NaN."""
    return dollars(x, sign=False)


def _cost_cell(row: Any) -> str:
    if _isnan(row["cost_usd/mean"]):
        note = row.get("cost_usd/note")
        return f'<span class="muted" title="{_esc(note if isinstance(note, str) else "")}">unknown</span>'
    return (f'{_usd(row["cost_usd/mean"])} <span class="ci">[{_usd(row.get("cost_usd/ci_low"))}, '
            f'{_usd(row.get("cost_usd/ci_high"))}]</span>')


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


def _color(cmp: Comparison, agent: str) -> str:
    return _PALETTE[cmp.agents.index(agent) % len(_PALETTE)]


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


def _pairwise_section(cmp: Comparison) -> str:
    if len(cmp.agents) < 2:
        return ""
    out = ['<section id="pairwise"><h2>Pairwise</h2><p class="muted">Difference = mean of A − B over paired cases; '
           "wins/ties/losses count cases where A scored higher/the same/lower. p and the range are adjusted for the "
           "number of pairs that could differ significantly (pairs that cannot are left out); significant: adjusted "
           f"p below {1 - cmp.confidence:.2g}.</p>"]
    for metric in cmp.metric_names:
        table = cmp.pairwise(metric)
        level = float(table.attrs.get("interval_confidence", cmp.confidence))
        headers = [("A", False), ("B", False), ("cases", True), ("A − B", True), (f"range ({level * 100:.4g}%)", True),
                   ("p", True), ("p adjusted", True), ("test", False), ("W / T / L", True), ("", False)]
        rows = []
        for r in table.itertuples(index=False):
            if r.significant:
                mark = '<span class="sig">significant</span>'
            elif not r.in_family:
                why = "identical on every case" if r.wins + r.losses == 0 else "too few cases differ"
                mark = f'<span class="ns">cannot be significant: {why}</span>'
            else:
                mark = '<span class="ns">not significant</span>'
            rows.append([
                _breakable(r.agent_a), _breakable(r.agent_b), _esc(r.n), _fmt(r.difference),
                f'<span class="ci">[{_fmt(r.ci_low)}, {_fmt(r.ci_high)}]</span>', _fmt_p(r.p_value),
                _fmt_p(r.p_holm), _esc(r.test), f"{r.wins} / {r.ties} / {r.losses}", mark,
            ])
        first = metric == cmp.metric_names[0]
        n_sig = int(table["significant"].sum())
        out.append(
            f'<details class="pairs"{" open" if first else ""}><summary><b>{_esc(metric)}</b> '
            f'<span class="muted">{n_sig} of {len(table)} pairs significant</span></summary>'
            + _table(headers, rows, "pairwise") + "</details>"
        )
    out.append("</section>")
    return "".join(out)


def _robustness_section(cmp: Comparison) -> str:
    """"How it holds up": each agent's drop under seeded tool faults (``compare(..., faults=...)``)."""
    found = getattr(cmp, "robustness", None)
    if found is None:
        return ""
    out = ['<section id="robustness"><h2>How it holds up</h2><p class="muted">'
           f"Each agent ran clean and under {_esc(found.faults)} on the same {found.cases} cases"
           f"{f' × {found.trials} trials' if found.trials > 1 else ''}. Drop = clean − faulted (failed runs score 0), "
           "tested by sign-flip permutation of the per-case drops; each range inverts its test at the level Holm "
           f"decided it at across the agents; significant: adjusted p below {1 - found.confidence:.2g}.</p>"]
    headers = [("agent", False), ("metric", False), ("cases", True), ("clean", True), ("faulted", True),
               ("drop", True), ("range", True), ("p adjusted", True), ("", False)]
    rows = []
    for r in found.drops.itertuples(index=False):
        if r.n == 0:
            mark = '<span class="ns">no case scored on both sides</span>'
        elif r.significant:
            mark = f'<span class="sig">{"drops under faults" if r.drop > 0 else "higher under faults"}</span>'
        else:
            mark = '<span class="ns">no significant drop</span>'
        rows.append([_breakable(r.agent), _esc(r.metric), _esc(r.n), _fmt(r.clean), _fmt(r.faulted), _fmt(r.drop),
                     f'<span class="ci">[{_fmt(r.ci_low)}, {_fmt(r.ci_high)}] {r.ci_level * 100:.4g}%</span>',
                     _fmt_p(r.p_holm), mark])
    out.append(_table(headers, rows, "robustness"))
    kinds = found.fault_kinds
    if len(kinds):
        items = []
        for agent, group in kinds.groupby("agent", sort=False):
            met = ", ".join(f"{_esc(k.kind)} {_fmt(k.drop)} ({k.runs} run{'s' if k.runs != 1 else ''})"
                            for k in group.itertuples())
            items.append(f"<li><b>{_esc(agent)}</b>: {met}</li>")
        out.append(f'<p class="muted">Fault kinds met, with the mean drop on {_esc(kinds.attrs.get("metric", ""))} of '
                   f'the runs that met each (a run can meet several):</p><ul class="verdict">{"".join(items)}</ul>')
    if len(found.consistency):
        items = []
        from ..robustness import consistency_parts

        for c in found.consistency.itertuples():
            parts = [_esc(part) for part in consistency_parts(c)]
            if parts:
                items.append(f"<li><b>{_esc(c.agent)}</b> over {c.trials} clean trials: {'; '.join(parts)}</li>")
        if items:
            out.append(f'<p class="muted">Consistency ({found.confidence:.0%} exact intervals):</p>'
                       f'<ul class="verdict">{"".join(items)}</ul>')
    out.append("</section>")
    return "".join(out)


def _call_text(call: Any) -> str:
    # Agent data may hold anything (sets, objects, cycles): written by to_jsonable's rules, never raising.
    args = json.dumps(to_jsonable(call.tool_input), sort_keys=True, ensure_ascii=False)
    return f"{call.tool_name}({args})"


def _in_reference_order(marked: Sequence[MarkedCall]) -> list[MarkedCall]:
    """The calls as made, with each missing reference call put where the reference has it.

    A missing call goes before the first call the agent made for a later reference call, or
    after everything when no later one was made, so the gap shows where it happened.
    """
    placed = [m for m in marked if m.status != "missing"]
    for miss in sorted((m for m in marked if m.status == "missing"), key=lambda m: m.reference_index or 0):
        j = miss.reference_index or 0
        at = next(
            (i for i, m in enumerate(placed) if m.reference_index is not None and m.reference_index > j),
            len(placed),
        )
        placed.insert(at, miss)
    return placed


def _calls(marked: list[MarkedCall]) -> str:
    if not marked:
        return '<p class="muted">no tool calls</p>'
    items = []
    for m in _in_reference_order(marked):
        main = m.predicted if m.predicted is not None else m.reference
        label = {"match": "match", "mismatch": "args differ", "extra": "extra", "missing": "missing"}[m.status]
        extra = ""
        if m.status == "mismatch" and m.reference is not None:
            extra = f'<span class="expected">expected {_esc(_call_text(m.reference))}</span>'
        if m.predicted is not None and m.predicted.error:
            extra += f'<span class="expected fail">error: {_esc(m.predicted.error)}</span>'
        items.append(f'<li class="{m.status}"><span class="tag">{label}</span>{_long(_call_text(main), 2000)}{extra}</li>')
    return f'<ol class="calls">{"".join(items)}</ol>'


def _agent_column(cmp: Comparison, agent: str, runs: list[AgentCase]) -> str:
    parts = [f'<div class="col"><h4 style="color:{_color(cmp, agent)}">{_esc(agent)}</h4>']
    for run in runs:
        if cmp.trials > 1:
            parts.append(f'<div class="muted">trial {run.trial + 1}</div>')
        if run.failure:
            parts.append(
                f'<p class="fail">failed: <span class="etype">{_esc(run.error_type or "error")}</span> '
                f'<span class="emsg">{_long(run.error, 4000)}</span></p>'
            )
            if run.partial:
                parts.append('<p class="muted">What it had produced before failing:</p>')
        if run.response is not None:
            parts.append(f'<pre class="text response">{_long(run.response)}</pre>')
        if not run.failure or run.partial:
            parts.append(_calls(run.calls))
        # One badge per metric, each labelled by its metric (a named list per trial took a screen).
        scores = "".join(_chip(v, m, name=m) for m, v in run.scores.items())
        parts.append(
            f'<div class="scores">{scores} <span class="muted">latency {_fmt(run.latency_in_seconds, 2)} s</span></div>'
        )
        parts += [_judged(metric, view) for metric, view in run.judged.items()]
    parts.append("</div>")
    return "".join(parts)


def _judged(metric: str, view: Any) -> str:
    """A judged metric's reasons for one run: every rubric verdict with its rationale, then the judge's explanation."""
    rows = []
    for v in view.verdicts:
        met = str(v.get("verdict", "")).lower() == "yes"
        turn = f"turn {_esc(v['turn'])} " if v.get("turn") is not None else ""
        agreement = f' <span class="muted">({_fmt(v["agreement"], 2)} of samples)</span>' if v.get("agreement") is not None else ""
        rows.append(
            f'<li class="{"match" if met else "miss"}"><b>{"yes" if met else "no"}</b> {turn}[{_esc(v.get("id", ""))}] '
            f'{_esc(v.get("property", ""))}{agreement}<br><span class="muted">{_esc(v.get("rationale", ""))}</span></li>'
        )
    body = f'<ul class="verdicts">{"".join(rows)}</ul>' if rows else ""
    if view.explanation and not rows:
        body += f'<pre class="text">{_long(view.explanation, 2000)}</pre>'
    if not body:
        return ""
    return f'<details class="judged"><summary>{_breakable(metric)}: the judge\'s reasons</summary>{body}</details>'


def _grid_columns(agents: int) -> int:
    """Columns of agents in the drill-down: at most four a row, rows as even as the count allows."""
    rows = max(1, math.ceil(agents / 4))
    return max(1, math.ceil(agents / rows))


REPORT_CASES = 5_000
"""Cases the report shows at most, in full: a page of a million cases is read by nobody (and would
take gigabytes); the cases that matter come first (see :func:`_shown_cases`)."""


def _shown_cases(cmp: Comparison, scores: Mapping[tuple[str, str], np.ndarray]) -> tuple[list[int], str]:
    """The positions of the cases the report shows, and a note when it leaves some out: every case
    where the agents differ or a run failed first, then the others, up to :data:`REPORT_CASES`, in
    dataset order. Found from the scores and failures kept, with no run read back."""
    n = len(cmp.dataset)
    if n <= REPORT_CASES:
        return list(range(n)), ""
    differs = np.zeros(n, dtype=bool)
    for m in cmp.metric_names:
        values = np.round(np.column_stack([scores[(m, a)] for a in cmp.agents]).astype(float), 9)
        low = np.where(np.isnan(values), np.inf, values).min(axis=1)
        high = np.where(np.isnan(values), -np.inf, values).max(axis=1)
        differs |= high > low
    index = {cid: i for i, cid in enumerate(cmp.case_ids)}
    for result in cmp.results.values():
        ids, _ = result.run_cases()
        for case_id, failed in zip(ids, result.run_failures()):
            if failed and case_id in index:
                differs[index[case_id]] = True
    first = np.flatnonzero(differs).tolist()
    rest = np.flatnonzero(~differs).tolist()
    shown = sorted((first + rest)[:REPORT_CASES])
    note = (f'<p class="muted">{len(shown):,} of {n:,} cases are shown: the ones where the agents differ or a run '
            "failed come first, then the others in dataset order. Every case's scores are in "
            "metrics_table.csv, and <code>levelfield view</code> on this folder shows any case.</p>")
    return shown, note


def _cases_section(cmp: Comparison) -> str:
    columns = _grid_columns(len(cmp.agents))
    # Plain arrays, not DataFrame lookups: this loop runs once per case.
    scores = {(m, a): cmp.case_scores(m)[a].to_numpy() for m in cmp.metric_names for a in cmp.agents}
    shown, note = _shown_cases(cmp, scores)
    out = [
        '<section id="cases"><h2>Cases</h2>',
        '<div class="controls"><input type="search" id="case-search" placeholder="filter by case id or prompt" '
        'aria-label="filter cases">'
        '<label><input type="checkbox" id="case-differ"> only cases where agents differ</label>'
        '<label><input type="checkbox" id="case-failed"> only cases with a failed run</label>'
        '<button type="button" id="expand-all">expand all</button>'
        '<button type="button" id="collapse-all">collapse all</button>'
        '<span id="case-count" class="muted"></span></div>',
        '<p class="legend muted">Calls: <span>✔ match</span><span>args differ: right tool, other arguments</span>'
        "<span>extra: not in the reference</span><span>missing: in the reference, not made (shown at its place "
        "in the reference order)</span></p>",
        '<p class="legend muted">Badges per agent, one per metric, each labelled by its metric: '
        + ", ".join(_metric_link(m) for m in cmp.metric_names) + "</p>",
        note,
    ]
    for i in shown:
        case = cmp.dataset[i]
        view = cmp.case_view(case.case_id)
        row = {key: values[i] for key, values in scores.items()}
        differs = any(
            len({round(float(row[(m, a)]), 9) for a in cmp.agents if not _isnan(row[(m, a)])}) > 1
            for m in cmp.metric_names
        )
        failed = any(r.failure for runs in view.runs.values() for r in runs)
        chips = '<span class="casechips">' + "".join(
            f'<span class="agentchips"><span class="muted" title="{_esc(a)}">{_esc(a)}</span>'
            + "".join(_chip(row[(m, a)], f"{a} · {m}", name=m) for m in cmp.metric_names)
            + "</span>"
            for a in cmp.agents
        )
        if failed:
            who = ", ".join(a for a, runs in view.runs.items() if any(r.failure for r in runs))
            chips += f' <span class="fail">failed run: {_esc(who)}</span>'
        chips += "</span>"
        search = f"{case.case_id} {_short(case.prompt, 1000)}".lower()
        body = [f'<div class="casebody"><h3>Prompt</h3><pre class="text">{_long(case.prompt)}</pre>']
        if case.history:
            hist = "\n".join(f"{m.role}: {m.content}" for m in case.history)
            body.append(f'<h3>History</h3><pre class="text">{_long(hist)}</pre>')
        # The reference is shared by every agent: a strip above them, not a column that leaves a gap.
        body.append('<div class="col reference"><h4>reference</h4><div class="refgrid"><div>')
        if case.reference is not None:
            body.append(f'<pre class="text">{_long(case.reference)}</pre>')
        else:
            body.append('<p class="muted">no reference response</p>')
        body.append("</div><div>")
        if case.reference_trajectory is not None:
            refs = "".join(f'<li class="match">{_esc(_call_text(c))}</li>' for c in case.reference_trajectory)
            body.append(f'<ol class="calls">{refs}</ol>' if refs else '<p class="muted">no tool calls expected</p>')
        else:
            body.append('<p class="muted">no reference trajectory</p>')
        body.append("</div></div></div>")
        body.append(f'<div class="grid" style="grid-template-columns:repeat({columns},minmax(0,1fr))">')
        body.extend(_agent_column(cmp, a, view.runs.get(a, [])) for a in cmp.agents)
        body.append("</div></div>")
        out.append(
            f'<details class="case" id="case-{_esc(case.case_id)}" data-search="{_esc(search)}" '
            f'data-differs="{int(differs)}" data-failed="{int(failed)}"><summary><span class="cid">'
            f'{_esc(case.case_id)}</span><span class="prompt">{_esc(_short(case.prompt))}</span>{chips}</summary>'
            f'{"".join(body)}</details>'
        )
    out.append("</section>")
    return "".join(out)


def _verdict_section(cmp: Comparison) -> str:
    found = verdict(cmp)
    if not found.metrics:
        return ""
    items = []
    for v in found.metrics:
        if not v.best:
            items.append(f"<li>{_metric_link(v.metric)}: no agent could be scored.</li>")
            continue
        bold = [f"<b>{_esc(a)}</b>" for a in v.best]
        names = bold[0] if len(bold) == 1 else f"{', '.join(bold[:-1])} and {bold[-1]}"
        lead = f"{names} tie for best" if len(v.best) > 1 else f"{names} is best"
        detail = []
        for x in v.versus:
            words, cls = ("significantly better", "sig") if x.significant else ("not significantly better", "ns")
            detail.append(f'<span class="{cls}">{words} than {_esc(x.other)}</span> <span class="ci">({_esc(x.evidence())})</span>')
        items.append(
            f'<li>{_metric_link(v.metric)}: {lead} <span class="ci">({_fmt(v.mean)})</span>'
            + (f"; {'; '.join(detail)}" if detail else "") + ".</li>"
        )
    stopped = early_stop_line(cmp)
    stopped = (f'<p class="headline">{_esc(stopped)} <span class="ci">(an always-valid sequential test: stopping '
               "when the answer is known keeps the error rate at the level stated)</span></p>") if stopped else ""
    return (
        f'<section id="verdict"><h2>Verdict</h2>{stopped}<p class="headline">{_esc(found.headline)}</p>'
        + (f'<p class="cost">{_esc(found.cost)}</p>' if found.cost else "") +
        f'<ul class="verdict">{"".join(items)}</ul><p class="muted">Best = highest mean. Significant: too large a '
        f"difference, on the same cases, to be luck ({int(round(cmp.confidence * 100))}% level, adjusted for the "
        'number of pairs compared). Details under <a href="#pairwise">Pairwise</a>.</p></section>'
    )


def _failures_section(cmp: Comparison, case_link: Callable[[str], str] = lambda cid: f"#case-{cid}") -> str:
    groups = failure_groups({a: r.failures for a, r in cmp.results.items()})  # journaled runs: the failed ones read back
    if not groups:
        return ""
    headers = [("agent", False), ("error type", False), ("runs", True), ("example case", False), ("example message", False)]
    rows = [
        [f'<span style="color:{_color(cmp, g.agent)}">■</span> {_esc(g.agent)}', f'<span class="etype">{_esc(g.error_type)}</span>',
         _esc(g.count), f'<a href="{_esc(case_link(g.case_id))}">{_esc(g.case_id)}</a>', f'<span class="emsg">{_esc(g.example)}</span>']
        for g in groups
    ]
    if any(g.failure_class for g in groups):
        # A2A agents: whose fault (protocol: the server broke the spec, with the rule; transport; agent).
        headers.insert(2, ("whose fault", False))
        for row, g in zip(rows, groups):
            row.insert(2, _esc(f"{g.failure_class}: {g.rule}" if g.rule else g.failure_class or ""))
    return (
        '<section id="failures"><h2>Failures</h2><p class="muted">Failed runs by agent and error type, with the first '
        "message of each type. Every failed run's own message is in its case below.</p>"
        + _table(headers, rows, "failures") + "</section>"
    )


_TOOL_CALLS = {
    "adk": "tool calls as ADK-marked data parts (read)",
    "data": "tool calls as plain data parts (not read: its trajectory metrics are not scored)",
    "none": "no tool calls seen in its answer",
    "unknown": "tool calls unknown",
}


def _a2a_section(cmp: Comparison) -> str:
    """Each A2A agent's conformance preflight, beside the agent: the verdict, its failed and warned
    checks with the spec section, and how it exposes tool calls (every check in a fold)."""
    found = cmp.a2a_preflight
    if not found:
        return ""
    parts = []
    headers = [("check", False), ("version", False), ("status", False), ("detail", False), ("spec", False)]
    for agent, pre in found.items():
        swatch = f'<span style="color:{_color(cmp, agent)}">■</span> ' if agent in cmp.agents else ""
        if "error" in pre:
            parts.append(f"<h3>{swatch}{_esc(agent)}</h3><p>the preflight could not run: {_esc(pre['error'])}</p>")
            continue
        checks = [c for c in pre.get("checks") or [] if isinstance(c, dict)]
        counts = {s: sum(c.get("status") == s for c in checks) for s in ("pass", "warn", "fail", "skip")}
        verdict = "conforms" if not counts["fail"] else "does NOT conform"
        line = (f"{verdict}: {counts['pass']} pass, {counts['warn']} warn, {counts['fail']} fail, {counts['skip']} skip; "
                f"{_TOOL_CALLS.get(str(pre.get('tool_calls')), str(pre.get('tool_calls')))}; probed "
                f"{', '.join(pre.get('versions') or []) or 'nothing'}")
        rows = [[_esc(c.get("name")), _esc(c.get("version") or "-"), f'<span class="etype">{_esc(c.get("status"))}</span>',
                 _esc(c.get("detail")), _esc(c.get("section"))] for c in checks]
        bad = [row for row, c in zip(rows, checks) if c.get("status") in ("fail", "warn")]
        parts.append(
            f"<h3>{swatch}{_esc(agent)}</h3><p>{_esc(line)}</p>"
            + (_table(headers, bad, "preflight") if bad else "")
            + f"<details><summary>every check ({len(checks)})</summary>{_table(headers, rows, 'preflight')}</details>"
        )
    return (
        '<section id="a2a"><h2>A2A conformance</h2><p class="muted">Before the first case each A2A agent was checked '
        "against the protocol (its card, then probe messages with the first case's prompt; <code>levelfield a2a-check "
        "URL</code> does the same). A failed run that broke the spec counts as a protocol failure, not the agent's.</p>"
        + "".join(parts) + "</section>"
    )


def _limits_section(cmp: Comparison) -> str:
    """The endpoints' limits: the concurrency each ran at, rate-limited answers, time waiting on limits.

    From the live limits when the comparison was just run; from the runs' own ``rate_limited`` and
    ``waited_seconds`` when it was loaded from a folder. Nothing when no limit was met."""
    stats = [s for s in cmp.limits if s.met]
    if stats:
        headers = [("endpoint", False), ("ran at (mean in flight)", True), ("limit", True), ("peak", True),
                   ("calls", True), ("rate-limited", True), ("waiting (s)", True)]
        rows = [[_esc(s.endpoint), f"{s.mean_in_flight:.1f}",
                 _esc(f"{s.limit} of {s.ceiling}" if s.adaptive else f"{s.ceiling} (fixed)"), _esc(s.peak_in_flight),
                 _esc(s.calls), _esc(s.rate_limited), f"{s.waited_seconds:.1f}"] for s in stats]
    else:
        totals = {a: res.limit_totals() for a, res in cmp.results.items()}
        if not any(n or w >= 0.05 for n, w in totals.values()):
            return ""
        headers = [("agent", False), ("rate-limited", True), ("waiting (s)", True)]
        rows = [[_esc(a), _esc(n), f"{w:.1f}"] for a, (n, w) in totals.items()]
    return (
        '<section id="limits"><h2>Rate limits</h2><p class="muted">Calls the endpoints refused for their rate limits '
        "(HTTP 429/503), absorbed by the adaptive concurrency (waited out and tried again, not failed attempts), and "
        "the time runs spent waiting on limits. Mean in flight is the concurrency each endpoint effectively ran at.</p>"
        + _table(headers, rows, "limits") + "</section>"
    )


def _tools_section(cmp: Comparison) -> str:
    """Tool levelling: the cassette and fault schedule, and per agent how its calls were answered."""
    from ..comparison_text import tool_lines

    lines = tool_lines(cmp)
    if not lines:
        return ""
    items = "".join(f"<li>{_esc(line.strip())}</li>" for line in lines[1:])
    return (f'<section id="tools"><h2>Tools</h2><p class="muted">{_esc(lines[0])}. Replayed: answered from the '
            "cassette or from the record another agent of this comparison made; missed: not in the cassette. A remote "
            f'agent cannot be levelled: its tools run on its server.</p><ul class="verdict">{items}</ul></section>')


def _glossary_section(cmp: Comparison) -> str:
    items = "".join(
        f'<dt id="glossary-{_esc(m.name)}">{_esc(m.name)}</dt><dd>{_esc(describe_metric(m))}</dd>' for m in cmp.metrics
    )
    return (
        '<section id="glossary"><h2>Metric glossary</h2><p class="muted">Every score lies in [0, 1]; higher is better. '
        "pass@k: share of cases solved in at least one of k trials; pass^k: in all k; flaky: cases whose trials "
        f'disagree.</p><dl class="glossary">{items}</dl></section>'
    )


_NO_VARIANCE = "No noise to split: every run scored the same (shares left out: no variance)."


def _noise_section(cmp: Comparison) -> str:
    """Where the noise comes from, in words, when there are trials or judge samples to tell it by."""
    if not cmp.splits_noise:
        return ""
    table = cmp.noise()
    table = table[(table["trials"] > 1) | (table["samples"] > 1)]
    if table.empty:
        return ""
    items = []
    for _, row in table.iterrows():
        if not row["advice"]:
            continue
        measured = [row[f"share_{source}"] for source in ("case", "trial", "judge") if not _isnan(row[f"var_{source}"])]
        # Shares of no variance at all cannot be computed (0/0): say so rather than print "nan%".
        advice = row["advice"] if not any(_isnan(v) for v in measured) else _NO_VARIANCE
        parts = []
        for source, label in (("case", "cases"), ("trial", "trials"), ("judge", "judge samples")):
            value = row[f"var_{source}"]
            if isinstance(value, float) and math.isnan(value):
                continue
            parts.append(f"{label} {_fmt(value)} [{_fmt(row[f'var_{source}_low'])}, {_fmt(row[f'var_{source}_high'])}]")
        items.append(f"<li><b>{_esc(row['agent'])}</b>, {_metric_link(row['metric'])}: {_esc(advice)} "
                     f'<span class="ci">(variance by source: {_esc("; ".join(parts))})</span></li>')
    if not items:
        return ""
    return ('<section id="noise"><h2>Where the noise comes from</h2><ul class="verdict">' + "".join(items)
            + '</ul><p class="muted">A score varies because cases differ, because the agent answers differently '
            "when run again (trials), and because the judge rates differently when asked again (judge samples). "
            "The advice weighs what each narrows against what it costs (a run and a judge call counted alike).</p></section>")


def _panel_section(cmp: Comparison) -> str:
    """What each panel of judges is worth (``lf.panel_report``), for every agent judged by a panel."""
    from .._core.errors import LevelfieldError
    from .._core.stats.panel import panel_metrics, panel_report

    items = []
    for agent, result in cmp.results.items():
        if getattr(result, "streamed", False) or not panel_metrics(result):
            continue
        try:
            text = str(panel_report(result))
        except LevelfieldError as exc:  # e.g. the dataset's human_label field cannot be read: say so here
            text = f"no panel report: {exc}"
        items.append(f"<li><b>{_esc(agent)}</b><pre>{_esc(text)}</pre></li>")
    if not items:
        return ""
    return ('<section id="panels"><h2>Panels of judges</h2><ul class="verdict">' + "".join(items)
            + '</ul><p class="muted">A panel\'s votes are worth n / (1 + (n − 1)·ρ̄) independent ones, ρ̄ the mean '
            "correlation of their errors against the human labels (the dataset's human_label field); the cheapest "
            "subset is the cheapest set of judges × samples whose majority reaches 95% agreement with the humans, "
            "or without labels with the full panel. See docs/judges.md.</p></section>")


def report_sections(
    cmp: Comparison, *, cases: str | None = None, case_link: Callable[[str], str] | None = None
) -> tuple[str, str]:
    """The report's navigation bar and its sections, as HTML, for a page of one's own (``levelfield view``).

    ``cases`` replaces the built cases section (every case expanded in place) with other markup,
    e.g. a paged table; ``case_link(case_id)`` is where the failures table links a case.
    """
    failures = _failures_section(cmp, case_link) if case_link else _failures_section(cmp)
    limited = _limits_section(cmp)
    conformance = _a2a_section(cmp)
    against = baseline_section(cmp)
    cost = _cost_section(cmp)
    robust = _robustness_section(cmp)
    judges = judge_section(cmp)
    panels = _panel_section(cmp)
    body = [
        _verdict_section(cmp),
        _policy_note(cmp),
        _evaluators_note(cmp),
        against,
        _summary_section(cmp),
        conformance,
        _charts_section(cmp),
        cost,
        _pairwise_section(cmp),
        robust,
        _noise_section(cmp),
        judges,
        panels,
        failures,
        limited,
        _tools_section(cmp),
        _cases_section(cmp) if cases is None else cases,
        _glossary_section(cmp),
    ]
    multi = len(cmp.agents) > 1
    nav = (
        "<nav>" + ('<a href="#verdict">Verdict</a>' if multi else "")
        + ('<a href="#baseline">Baseline</a>' if against else "") + '<a href="#summary">Summary</a>'
        '<a href="#charts">Metrics</a>' + ('<a href="#a2a">A2A</a>' if conformance else "")
        + ('<a href="#cost">Cost</a>' if cost else "")
        + ('<a href="#pairwise">Pairwise</a>' if multi else "")
        + ('<a href="#robustness">How it holds up</a>' if robust else "")
        + ('<a href="#judges">Judges</a>' if judges else "")
        + ('<a href="#panels">Panels</a>' if panels else "")
        + ('<a href="#failures">Failures</a>' if failures else "")
        + ('<a href="#limits">Rate limits</a>' if limited else "")
        + '<a href="#cases">Cases</a><a href="#glossary">Glossary</a></nav>'
    )
    return nav, "".join(body)


def render(cmp: Comparison, *, title: str | None = None) -> str:
    """The report as one HTML string."""
    script = _asset("report.js")
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    csp = f"default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'sha256-{digest}'"
    title = title or f"levelfield · {len(cmp.agents)} agents on {Path(cmp.dataset.source).name}"
    generated = _dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    agents = ", ".join(_esc(a) for a in cmp.agents)
    meta = (
        f"{_esc(cmp.dataset.source)} · {len(cmp.dataset)} cases · agents: {agents} · "
        f"{cmp.trials} trial{'s' if cmp.trials != 1 else ''} per case · generated {generated}"
    )
    nav, body = report_sections(cmp)
    return (
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="icon" href="data:,">'
        f"<title>{_esc(title)}</title><style>{_asset('style.css')}</style></head><body>"
        f'<header><h1>{_esc(title)}</h1><p class="meta">{meta}</p>{nav}</header>'
        f'<main>{body}</main>'
        '<footer>Written by levelfield. Self-contained: no network needed to view.</footer>'
        f"<script>{script}</script></body></html>\n"
    )


def write(cmp: Comparison, path: str | Path, *, title: str | None = None) -> Path:
    """Write the report to ``path`` (parent directories created) and return the path; written
    atomically, so a full disk leaves the previous report whole rather than a cut-off one."""
    return write_text(path, render(cmp, title=title))


# -- shared with the live view (levelfield view): the same escaping, badges and call marks ----------

escape = _esc
breakable = _breakable
long_text = _long
score_chip = _chip
number = _fmt
call_text = _call_text
in_reference_order = _in_reference_order
asset = _asset


def agent_color_of(index: int) -> str:
    """The report's colour for the agent at ``index``."""
    return _PALETTE[index % len(_PALETTE)]
