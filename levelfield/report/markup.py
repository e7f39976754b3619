"""The report's markup, shared with the live view: escaping, shortened texts, numbers, score badges, tables, agent colours."""

from __future__ import annotations

import html
import math
import re
from collections.abc import Iterable
from importlib import resources
from typing import TYPE_CHECKING, Any

from .._core.data.money import dollars

if TYPE_CHECKING:
    from ..comparison._comparison import Comparison

__all__ = ["TEXT_LIMIT", "agent_color_of"]

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
    if _isnan(x):
        return "–"
    if 1e-12 < abs(float(x)) < 1e-4:
        return "<1e-4" if float(x) > 0 else ">-1e-4"  # a bound just off 0 never reads as 0 (as the terminal's); escape it
    text = f"{float(x):.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


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


def _usd(x: Any) -> str:
    """Dollars in a column headed "($)": plain decimals (:func:`dollars`), "unknown" for NaN."""
    return dollars(x, sign=False)


def _color(cmp: Comparison, agent: str) -> str:
    return _PALETTE[cmp.agents.index(agent) % len(_PALETTE)]


def agent_color_of(index: int) -> str:
    """The report's colour for the agent at ``index``."""
    return _PALETTE[index % len(_PALETTE)]
