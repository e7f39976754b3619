"""The report's "Against the baseline" section: each metric's change in words, for a comparison with a baseline.

Self-contained HTML (its own markup, escaped), so the report can place it anywhere:
``baseline_section(cmp)`` returns "" when the comparison has no baseline.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from .._core.stats.change import describe_change
from ..gate import baseline_changes

if TYPE_CHECKING:
    from ..comparison._comparison import Comparison

__all__ = ["baseline_section"]

_CLASS = {"regression": "bad", "improvement": "good"}


def baseline_section(cmp: Comparison, *, alpha: float = 0.05) -> str:
    """An HTML ``<section id="baseline">`` listing every metric's change against ``cmp.baseline`` in words."""
    if cmp.baseline is None:
        return ""
    items = []
    for change in baseline_changes(cmp, alpha=alpha):
        cls = _CLASS.get(change.verdict, "")
        items.append(
            f'<li class="{cls}"><b>{html.escape(change.metric)}</b> ({html.escape(change.agent)}): '
            f"{html.escape(describe_change(change))}</li>"
        )
    note = html.escape(cmp.baseline.describe())
    return (
        '<section id="baseline"><h2>Against the baseline</h2>'
        f'<p class="muted">{note}. Paired test per metric, Holm-adjusted across them.</p>'
        f'<ul class="changes">{"".join(items)}</ul></section>'
    )
