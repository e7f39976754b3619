"""The report's judge section: each judged yes/no metric against human labels, corrected, with the judge's calibration.

Shown when an agent's result was corrected (``evaluate(..., human_labels=...)``) or the dataset has a
``human_label`` column: per agent and metric the judged and corrected rates, how the correction was
made, the judge's sensitivity, specificity and kappa, and, where the judge gave probabilities, its
Brier score, expected calibration error and reliability table.
"""

from __future__ import annotations

import html
import math
from typing import TYPE_CHECKING, Any

from .._core.errors import LevelfieldError
from .._core.stats.judge_correction import correct_judged, judged_binary_metrics

if TYPE_CHECKING:
    from ..comparison._comparison import Comparison

__all__ = ["judge_section"]


def _pct(x: float) -> str:
    return "–" if math.isnan(x) else f"{x * 100:.1f}%"


def _num(x: float, digits: int = 3) -> str:
    return "–" if math.isnan(x) else f"{x:.{digits}f}"


def _corrections(cmp: Comparison, agent: str) -> tuple[dict[str, Any], str | None]:
    """An agent's judge corrections: the result's own, else from the dataset's ``human_label`` column;
    with the reason when they cannot be made (the report says it rather than failing)."""
    result = cmp.results[agent]
    made = getattr(result, "judge_corrections", None)
    if made:
        return made, None
    if not any(c.metadata.get("human_label") is not None for c in cmp.dataset) or not judged_binary_metrics(result):
        return {}, None
    stats = getattr(cmp, "stats", None)
    try:
        return correct_judged(result, confidence=cmp.confidence,
                              judge_scores=getattr(stats, "judge_scores", "verdict")), None
    except LevelfieldError as exc:
        return {}, str(exc)


def judge_section(cmp: Comparison) -> str:
    """The section as HTML ("" when no judged metric has human labels)."""
    rows, details, problems = [], [], []
    for agent in cmp.agents:
        corrections, problem = _corrections(cmp, agent)
        if problem:
            problems.append(f"<li><b>{html.escape(agent)}</b>: {html.escape(problem)}</li>")
        for metric, c in corrections.items():
            cal = c.calibration
            how = "judge's probabilities, calibrated" if c.method == "calibrated-probability" else "verdicts, Rogan–Gladen"
            rows.append("".join(f"<td{' class=num' if i > 1 else ''}>{cell}</td>" for i, cell in enumerate([
                html.escape(agent), html.escape(metric), _pct(c.judged_rate),
                f"{_pct(c.corrected)} [{_pct(c.low)}, {_pct(c.high)}]", html.escape(how), str(c.labeled),
                _num(c.sensitivity, 2), _num(c.specificity, 2), _num(c.kappa, 2),
                _num(cal.brier) if cal else "–", _num(cal.ece) if cal else "–"])))
            if cal is not None:
                bins = "".join(
                    f"<tr><td>[{lo:.1f}, {hi:.1f}{']' if hi >= 1 else ')'}</td><td class=num>{mp:.2f}</td>"
                    f"<td class=num>{rate:.2f}</td><td class=num>{n}</td></tr>" for lo, hi, mp, rate, n in cal.bins)
                details.append(
                    f"<details><summary>{html.escape(agent)}, {html.escape(metric)}: reliability of the judge's "
                    f"probabilities ({cal.labeled} labelled rows)</summary><div class=\"tablewrap\"><table>"
                    "<thead><tr><th>p bin</th><th class=num>mean p</th><th class=num>observed pass rate</th>"
                    f"<th class=num>rows</th></tr></thead><tbody>{bins}</tbody></table></div></details>")
    if not rows and not problems:
        return ""
    head = "".join(f"<th{' class=num' if i > 1 else ''}>{h}</th>" for i, h in enumerate(
        ["agent", "metric", "judged", f"corrected [{int(cmp.confidence * 100)}% interval]", "from", "human labels",
         "sensitivity", "specificity", "kappa", "Brier", "ECE"]))
    table = (f'<div class="tablewrap"><table><thead><tr>{head}</tr></thead><tbody>'
             + "".join(f"<tr>{r}</tr>" for r in rows) + "</tbody></table></div>") if rows else ""
    issues = f'<ul class="verdict">{"".join(problems)}</ul>' if problems else ""
    return ('<section id="judges"><h2>Judges against human labels</h2>' + table + issues + "".join(details)
            + '<p class="muted">A judge that passes bad answers or fails good ones biases a judged rate; the human '
            "labels measure it and correct the rate. Brier: mean squared error of the judge's probability (0 is "
            "perfect, 0.25 a coin); ECE: the gap between its probabilities and the observed pass rates, averaged "
            "over the bins of the reliability table.</p></section>")
