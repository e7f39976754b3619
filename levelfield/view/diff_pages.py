"""The pages of ``levelfield view`` that compare two runs: the diff of their cases by a metric, and one case side by side."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from .._core.data.dataset import EvalCase
from .._core.data.types import AgentRun
from .._core.score.metrics.base import Score
from .._core.stats.change import describe_change
from ..report.html import escape as esc
from ..report.html import long_text, number, score_chip
from .diff import ChangedCase, RunDiff
from .index import RunIndex
from .pages import _moved, _when, href, reference_column, run_column, shell
from .query import page_of

__all__ = ["diff_page", "diff_case_page", "evaluators_differ_page"]


def _verdict_class(verdict: str) -> str:
    return {"regression": "bad", "improvement": "good"}.get(verdict, "")


def diff_page(diff: RunDiff, *, metric: str, page: int, agents_form: str) -> str:
    """What changed from run A to run B: each metric's change tested, then the changed cases per metric."""
    a, b = diff.a, diff.b
    kept = {"allow_different_evaluators": 1} if diff.allowed_different_evaluators else {}
    rows = []
    for c in diff.changes:
        rows.append(
            f'<tr class="{_verdict_class(c.verdict)}"><td><b><a href="#metric-{esc(c.metric)}">{esc(c.metric)}</a></b></td>'
            f'<td class="num">{number(_mean(a, c.metric, diff))}</td><td class="num">{number(_mean(b, c.metric, diff))}</td>'
            f'<td class="num">{len(diff.changed.get(c.metric, [])):,}</td><td class="verdict {esc(c.verdict.replace(" ", "-"))}">'
            f"{esc(c.verdict)}</td><td>{esc(describe_change(c))}</td></tr>"
        )
    summary = (
        '<section id="significance"><h2>Did it change?</h2><p class="muted">B against A on the '
        f"{len(diff.cases):,} cases both runs hold: the regression gate's paired test (McNemar's score test for 0/1 scores, "
        "the paired t test otherwise), Holm-adjusted across the metrics.</p>"
        '<div class="tablewrap"><table class="changes"><thead><tr><th>metric</th><th class="num">mean A</th>'
        '<th class="num">mean B</th><th class="num">cases changed</th><th>verdict</th><th>in words</th></tr></thead>'
        f'<tbody>{"".join(rows)}</tbody></table></div></section>'
    )
    groups = []
    for m in diff.metrics if not metric else [metric]:
        changed = diff.changed.get(m, [])
        items, shown_page, pages = _page_list(changed, page if metric else 1)
        worse = sum(1 for c in changed if c.direction < 0)
        better = sum(1 for c in changed if c.direction > 0)
        lines = "".join(
            f'<tr class="{_DIRECTION_CLASS[c.direction]}"><td><a class="diffcase" '
            f'href="{href("/diff/case", a=a.run_id, b=b.run_id, agent_a=a.agent, agent_b=b.agent, case=c.case_id)}">'
            f'{esc(c.case_id)}</a></td><td class="prompt">{esc(_prompt(b.index, c.case_id))}</td>'
            f'<td class="num">{_side_chip(c.a, c.crashed_a)}</td><td class="num">{_side_chip(c.b, c.crashed_b)}</td>'
            f'<td class="num">{_delta_text(c.delta, c.direction)}</td></tr>'
            for c in items
        )
        more = ""
        if pages > 1:
            nav = []
            if shown_page > 1:
                nav.append(f'<a href="{href("/diff", a=a.run_id, b=b.run_id, agent_a=a.agent, agent_b=b.agent, metric=m, page=shown_page - 1, **kept)}">‹ previous</a>')
            nav.append(f'<span class="muted">page {shown_page} of {pages}</span>')
            if shown_page < pages:
                nav.append(f'<a href="{href("/diff", a=a.run_id, b=b.run_id, agent_a=a.agent, agent_b=b.agent, metric=m, page=shown_page + 1, **kept)}">next ›</a>')
            more = f'<p class="pager">{" ".join(nav)}</p>'
        table = (
            f'<div class="tablewrap"><table class="changed"><thead><tr><th>case</th><th>prompt</th><th class="num">A</th>'
            f'<th class="num">B</th><th class="num">B − A</th></tr></thead><tbody>{lines}</tbody></table></div>'
            if changed else '<p class="muted">no case changed</p>'
        )
        groups.append(
            f'<section class="metricgroup" id="metric-{esc(m)}"><h3>{esc(m)} <span class="muted">{worse:,} worse, '
            f"{better:,} better</span></h3>{table}{more}</section>"
        )
    if metric:
        groups.append(f'<p><a href="{href("/diff", a=a.run_id, b=b.run_id, agent_a=a.agent, agent_b=b.agent, **kept)}">every metric</a></p>')
    head = (
        f'<h1>A → B</h1><p class="meta"><b>A</b> {esc(a.label)} · {esc(_when(a.index.created))} &nbsp; → &nbsp; '
        f'<b>B</b> {esc(b.label)} · {esc(_when(b.index.created))}</p>{agents_form}{_evaluator_label(diff.evaluator_notes)}'
    )
    if not diff.cases:
        return shell("diff", head + '<p class="fail">These runs have no case in common.</p>')
    body = head + summary + '<section id="changed"><h2>Cases whose score changed</h2><p class="muted">Per metric, the largest drop first; open a case to see both transcripts side by side.</p>' + "".join(groups) + "</section>"
    return shell("diff", body)


_DIRECTION_CLASS = {-1: "bad", 0: "", 1: "good"}


def _evaluator_label(notes: Sequence[str]) -> str:
    """The label of a diff made across different evaluators (or with evaluators not recorded), or ""."""
    if not notes:
        return ""
    items = "".join(f"<li>{esc(n)}</li>" for n in notes)
    kind = "fail" if any(n.startswith("compared across") for n in notes) else "muted"
    return f'<div class="evaluators {kind}" id="evaluators"><b>Evaluators:</b><ul>{items}</ul></div>'


def evaluators_differ_page(message: str, anyway: str) -> str:
    """The diff refused: the two runs' metrics were scored by other evaluators; ``anyway`` links the diff allowed."""
    return shell("diff refused", f'<h1>Not comparable</h1><p class="fail" id="refused">{esc(message)}</p>'
                 f'<p><a href="{anyway}" id="anyway">diff anyway, labelled as compared across different evaluators</a></p>')


def _side_chip(value: float, crashed: bool) -> str:
    """A side's score, or "crashed" where its run failed and left none."""
    return '<span class="chip bad" title="the run failed">crashed</span>' if crashed else score_chip(value)


def _delta_text(delta: float, direction: int) -> str:
    """B − A as a number; "worse"/"better" where one side crashed (no number to subtract)."""
    if not math.isnan(delta):
        return f"{delta:+.3f}"
    return {-1: "worse", 1: "better"}.get(direction, "–")


def _page_list(items: list[Any], page: int) -> tuple[list[Any], int, int]:
    positions, shown, pages = page_of(list(range(len(items))), page)
    return [items[i] for i in positions], shown, pages


def _mean(side: Any, metric: str, diff: RunDiff) -> float:
    positions = {cid: i for i, cid in enumerate(side.index.case_ids)}
    values = side.index.case_scores(metric, side.agent)
    picked = [values[positions[c]] for c in diff.cases if c in positions]
    finite = [v for v in picked if not math.isnan(v)]
    return sum(finite) / len(finite) if finite else math.nan


def _prompt(index: RunIndex, case_id: str) -> str:
    i = index.position(case_id)
    return "" if i is None else index.case_prompts[i][:160]


def diff_case_page(diff_link: str, a: Any, b: Any, case: EvalCase,
                   runs_a: Sequence[tuple[AgentRun, Mapping[str, Score]]],
                   runs_b: Sequence[tuple[AgentRun, Mapping[str, Score]]], reference_differs: bool) -> str:
    """One case in two runs: why the scores differ, then both transcripts side by side with the reference."""
    first_a = runs_a[0][1] if runs_a else {}
    first_b = runs_b[0][1] if runs_b else {}
    metrics = [m for m in b.index.metrics if m in a.index.metrics]
    rows = []
    failed_a = bool(runs_a) and runs_a[0][0].failure
    failed_b = bool(runs_b) and runs_b[0][0].failure
    for m in metrics:
        sa, sb = first_a.get(m), first_b.get(m)
        va = sa.value if sa else math.nan
        vb = sb.value if sb else math.nan
        change = ChangedCase(case.case_id, va, vb, failed_a and math.isnan(va), failed_b and math.isnan(vb))
        cls = _DIRECTION_CLASS[change.direction] if _moved(va, vb) else ""
        rows.append(
            f'<tr class="{cls}"><td><b>{esc(m)}</b></td><td class="num">{_side_chip(va, change.crashed_a)}</td>'
            f'<td class="num">{_side_chip(vb, change.crashed_b)}</td>'
            f'<td class="num">{_delta_text(change.delta, change.direction)}</td><td class="why">{long_text(sa.explanation if sa else "", 2000)}</td>'
            f'<td class="why">{long_text(sb.explanation if sb else "", 2000)}</td></tr>'
        )
    trials = "" if a.index.trials == 1 and b.index.trials == 1 else '<p class="muted">scores of the first trial; every trial is below.</p>'
    why = (
        '<section id="why"><h2>Why the score changed</h2>' + trials +
        '<div class="tablewrap"><table class="why"><thead><tr><th>metric</th><th class="num">A</th><th class="num">B</th>'
        '<th class="num">B − A</th><th>A: why</th><th>B: why</th></tr></thead>'
        f'<tbody>{"".join(rows)}</tbody></table></div></section>'
    )
    note = '<p class="muted">The reference of this case differs between the runs; B\'s is shown.</p>' if reference_differs else ""
    col_a = "".join(run_column(a.index, case, r, s, title=f"A · {a.label}", color="#3b6fb6", other=first_b) for r, s in runs_a) or \
        '<div class="col"><p class="muted">A has no run of this case</p></div>'
    col_b = "".join(run_column(b.index, case, r, s, title=f"B · {b.label}", color="#e07b39", other=first_a) for r, s in runs_b) or \
        '<div class="col"><p class="muted">B has no run of this case</p></div>'
    body = (
        f'<h1>case {esc(case.case_id)}: A → B</h1><p class="meta"><b>A</b> {esc(a.label)} &nbsp; → &nbsp; <b>B</b> {esc(b.label)}</p>'
        + why + note + '<section id="side-by-side"><h2>Both transcripts</h2>'
        + '<div class="grid casegrid" style="grid-template-columns:minmax(0,0.8fr) minmax(0,1fr) minmax(0,1fr)">'
        + f'{reference_column(case)}<div class="side a">{col_a}</div><div class="side b">{col_b}</div></div></section>'
    )
    return shell(f"case {case.case_id}: A → B", body, crumbs=[("diff", diff_link)])
