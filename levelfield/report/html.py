"""The HTML report of a comparison: one self-contained file, charts as inline SVG.

Everything is rendered in Python into static markup (here the page; its parts in ``markup``,
``charts``, ``cases``, ``sections_scores``, ``sections_runs``, ``changes`` and ``judges``); the small inline script only
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
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from .._core.results.writing import write_text
from .cases import _call_text, _cases_section, _in_reference_order
from .changes import baseline_section
from .charts import _charts_section, _cost_section
from .judges import judge_section
from .markup import TEXT_LIMIT, _asset, _breakable, _chip, _esc, _fmt, _long, agent_color_of
from .sections_runs import (
    _a2a_section,
    _failures_section,
    _glossary_section,
    _limits_section,
    _panel_section,
    _tools_section,
)
from .sections_scores import (
    _evaluators_note,
    _noise_section,
    _pairwise_section,
    _policy_note,
    _robustness_section,
    _summary_section,
    _verdict_section,
)

if TYPE_CHECKING:
    from ..comparison._comparison import Comparison

__all__ = ["render", "write", "report_sections", "asset", "TEXT_LIMIT",
           "escape", "breakable", "long_text", "score_chip", "number", "call_text", "in_reference_order", "agent_color_of"]


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
