"""The report's account of how the runs went: failures, A2A conformance, rate limits, tools, panels of judges, the glossary."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..comparison._failures import failure_groups
from .glossary import describe_metric
from .markup import _color, _esc, _table

if TYPE_CHECKING:
    from ..comparison._comparison import Comparison

__all__: list[str] = []  # private parts of the report page: levelfield.report.html puts them together


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
    from ..comparison._text import tool_lines

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
