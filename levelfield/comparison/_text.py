"""A comparison as terminal text: the summary table, the rule for failed runs, the verdict, the pairs.

``print(cmp)`` shows :func:`comparison_text` (verdict and summary in a screen); the ``levelfield``
command prints :func:`format_comparison` (the same, then one metric's pairs). Below the
comparison: it reads one through :class:`levelfield.comparison._verdict.Compared`.
"""

from __future__ import annotations

import math
from typing import Any

from .._core.data.money import dollars
from .._core.data.textwidth import ljust, rjust, width
from .._core.score.metrics.base import FAILED_AS_ZERO, FAILED_LEFT_OUT
from ._verdict import Compared, early_stop_line, failure_rule, other_rule, untestable_reason, verdict

__all__ = ["summary_lines", "rule_line", "verdict_text", "pairwise_lines", "comparison_text", "format_comparison",
           "evaluator_lines"]


def num(x: Any, digits: int = 3) -> str:
    """A number as the tables print it: 3 decimals, "-" for NaN or nothing."""
    try:
        x = float(x)
    except (TypeError, ValueError):
        return "-"
    if math.isnan(x):
        return "-"
    if 1e-12 < abs(x) < 1e-4:
        return "<1e-4" if x > 0 else ">-1e-4"  # a bound just off 0 (an interval that leaves 0 out) never reads as 0
    text = f"{x:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text  # no "-0.00" for a bound at 0


def rule_line(cmp: Compared) -> str:
    """The one line that says what the means are over and how failed runs entered them."""
    s = cmp.summary
    failures, runs = int(s["failures"].sum()), int(s["runs"].sum())
    failed = f"{failures} of {runs} runs failed" if failures else "no run failed"
    rests = cmp.rests_on() if hasattr(cmp, "rests_on") else ""
    cases = rests or f"{len(cmp.case_ids)} cases"
    soft = getattr(getattr(cmp, "stats", None), "judge_scores", "verdict") == "probability"
    scored = "; yes/no judged metrics score the judge's probability of a pass" if soft else ""
    return (f"(mean [{int(cmp.confidence * 100)}% interval] over {cases}; "
            f"{failure_rule(cmp.failed_runs)}: {failed}{scored})")


def summary_lines(cmp: Compared) -> list[str]:
    """Metrics × agents with intervals (and each metric's mean by the other rule when a run failed),
    failed runs, latency and tokens, then the rule line."""
    s = cmp.summary
    other = FAILED_LEFT_OUT if cmp.failed_runs == "zero" else FAILED_AS_ZERO
    any_failed = int(s["failures"].sum()) > 0
    rows: list[tuple[str, list[str]]] = []
    for m in cmp.metric_names:
        rows.append((m, [f"{num(s.loc[a, f'{m}/mean'])} [{num(s.loc[a, f'{m}/ci_low'], 2)}, "
                         f"{num(s.loc[a, f'{m}/ci_high'], 2)}]" for a in cmp.agents]))
        if any_failed and f"{m}/{other}" in s:
            rows.append((f"  {other_rule(cmp.failed_runs)}", [num(s.loc[a, f"{m}/{other}"]) for a in cmp.agents]))
    k = cmp.trials
    if k > 1:
        for m in cmp.metric_names:
            if f"{m}/pass@{k}" in s:
                rows.append((f"{m} pass@{k}", [num(s.loc[a, f"{m}/pass@{k}"]) for a in cmp.agents]))
                rows.append((f"{m} pass^{k}", [num(s.loc[a, f"{m}/pass^{k}"]) for a in cmp.agents]))
        first = cmp.metric_names[0]
        rows.append((f"flaky cases ({first})", [str(int(s.loc[a, f"{first}/flaky"])) for a in cmp.agents]))
    rows.append(("failed runs", [f"{int(s.loc[a, 'failures'])}/{int(s.loc[a, 'runs'])}" for a in cmp.agents]))
    rows.append(("latency p50 (s)", [num(s.loc[a, "latency_in_seconds/p50"]) for a in cmp.agents]))
    if "total_tokens/mean" in s:
        rows.append(("tokens per run", [num(s.loc[a, "total_tokens/mean"], 0) for a in cmp.agents]))
    unpriced = ""
    if "cost_usd/mean" in s:
        costs = [s.loc[a, "cost_usd/mean"] for a in cmp.agents]
        if all(math.isnan(c) for c in costs):
            # A row of "unknown" under every agent says less than why: one line below the table.
            unpriced = _unpriced_line(cmp)
        else:
            rows.append(("cost per run ($)", [_usd(c) for c in costs]))
    label_w = max(width(r[0]) for r in rows)
    col_w = [max(width(a), *(width(r[1][i]) for r in rows)) for i, a in enumerate(cmp.agents)]
    lines = ["  ".join([" " * label_w, *(rjust(a, w) for a, w in zip(cmp.agents, col_w))])]
    lines += ["  ".join([ljust(label, label_w), *(rjust(c, w) for c, w in zip(cells, col_w))]) for label, cells in rows]
    lines.append(rule_line(cmp))
    if unpriced:
        lines.append(unpriced)
    return lines


def _unpriced_line(cmp: Compared) -> str:
    """Why no agent's cost is known, once: each agent's note (an unpriced model, tokens without a model)."""
    s = cmp.summary
    notes = [f"{a}: {s.loc[a, 'cost_usd/note']}" for a in cmp.agents
             if isinstance(s.loc[a].get("cost_usd/note"), str)]
    return "(cost unknown" + (f": {'; '.join(notes)})" if notes else ": no agent reported tokens)")


def _usd(x: float) -> str:
    """Dollars in the "cost per run ($)" row: plain decimals, as everywhere (:func:`dollars`)."""
    return dollars(x, sign=False)


def verdict_text(cmp: Compared) -> str:
    """The verdict in sentences, "Verdict: " before its first line (empty with one agent)."""
    lines = verdict(cmp).lines()
    if not lines:
        return ""
    return "\n".join(["Verdict: " + lines[0], *(f"  {line}" for line in lines[1:])])


def _could_detect(mde: float) -> str:
    """``  could detect ≥ 0.080`` next to a non-significant pair (nothing when no MDE is known)."""
    return "" if mde is None or math.isnan(mde) else f"  could detect ≥ {mde:.3f}"


def pairwise_lines(cmp: Compared, metric: str) -> list[str]:
    """Every pair on one metric: difference, interval, adjusted p, wins/ties/losses, significant or not.

    Each interval inverts the pair's test at the level Holm decided it at (its own percentage when
    the pairs' levels differ), so it leaves out 0 exactly on the lines that say "significant"."""
    table = cmp.pairwise(metric)
    levels = [float(x) for x in table["ci_level"]] if "ci_level" in table else []
    same = len({round(x, 12) for x in levels}) <= 1
    shown = f"{levels[0] * 100:.4g}% interval" if levels and same else "interval at the level its test was decided"
    lines = [f"Pairwise on {metric} (A − B [{shown}], adjusted p; wins/ties/losses of A over B;",
             f"  adjusted across the {table.attrs.get('family', len(table))} pairs that could differ significantly, "
             "Tarone-Holm):"]
    a_w = max(width(a) for a in table["agent_a"])
    b_w = max(width(b) for b in table["agent_b"])
    for k, r in enumerate(table.itertuples(index=False)):
        diff = "-" if math.isnan(r.difference) else f"{r.difference:+.3f}"
        if r.significant:
            mark = "  significant"
        elif not r.in_family:
            reason = untestable_reason(r.wins + r.losses, float(getattr(r, "p_min", math.nan)), 1 - cmp.confidence)
            mark = "  cannot be significant: " + reason + _could_detect(r.mde)
        else:
            mark = "  not significant" + _could_detect(r.mde)
        p = "p=-" if math.isnan(r.p_holm) else ("p<0.001" if r.p_holm < 0.001 else f"p={r.p_holm:.3f}")
        level = "" if same or not levels else f" ({levels[k] * 100:.4g}%)"
        lines.append(
            f"  {ljust(r.agent_a, a_w)} vs {ljust(r.agent_b, b_w)}  {diff} [{num(r.ci_low, 2)}, {num(r.ci_high, 2)}]"
            f"{level}  {p}  {r.wins}/{r.ties}/{r.losses}{mark}"
        )
    return lines


def evaluator_lines(cmp: Any) -> list[str]:
    """The label of a comparison made across different evaluators (``allow_different_evaluators=True``), one
    line per difference; [] when the evaluators agree."""
    notes = list(getattr(cmp, "evaluator_notes", None) or [])
    return [f"Evaluators: {note}" for note in notes]


def comparison_text(cmp: Compared) -> str:
    """The verdict and the summary, to read in one screen (what ``print(cmp)`` shows)."""
    lines = summary_lines(cmp) + _closing_lines(cmp)
    text = "\n".join(t for t in (early_stop_line(cmp), verdict_text(cmp)) if t)
    return "\n".join([text, "", *lines] if text else lines)


def format_comparison(cmp: Compared, *, pairwise_metric: str | None = None) -> str:
    """The comparison as the CLI prints it: the summary, the verdict, then one metric's pairs."""
    lines = summary_lines(cmp)
    text = "\n".join(t for t in (early_stop_line(cmp), verdict_text(cmp)) if t)
    if text:
        lines += ["", text]
    metric = pairwise_metric or (cmp.metric_names[0] if cmp.metric_names else None)
    if metric and len(cmp.agents) > 1:
        lines += ["", *pairwise_lines(cmp, metric)]
    levelled = tool_lines(cmp)
    if levelled:
        lines += ["", *levelled]
    return "\n".join(lines + _closing_lines(cmp))


def _closing_lines(cmp: Compared) -> list[str]:
    """What follows the tables in both printouts: the evaluators' labels, then how the agents hold up under faults."""
    lines: list[str] = []
    labels = evaluator_lines(cmp)
    if labels:
        lines += ["", *labels]
    robustness = getattr(cmp, "robustness", None)
    if robustness is not None:
        lines += ["", *robustness.lines()]
    return lines


def tool_lines(cmp: Any) -> list[str]:
    """What the tool levelling did (``tools=``/``faults=``), per agent; [] when nothing was levelled. With
    ``compare(faults=...)``, the runs under faults (``cmp.faulted``) follow the clean ones."""
    from ..tools.summary import levelling_lines

    lines = levelling_lines(getattr(cmp, "tool_levelling", None), getattr(cmp, "tools_header", None))
    faulted = getattr(cmp, "faulted", None)
    if faulted is not None:
        under = levelling_lines(getattr(faulted, "tool_levelling", None), getattr(faulted, "tools_header", None))
        if under:
            under[0] = "Under faults (the runs paired with the clean ones): " + under[0]
            lines += under
    return lines