"""The report's cases: each case's prompt and reference, and every agent's runs of it side by side."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._core.data.jsonsafe import to_jsonable
from .markup import _breakable, _chip, _color, _esc, _fmt, _isnan, _long, _metric_link, _short

if TYPE_CHECKING:
    from .._core.score.diff import MarkedCall
    from ..comparison._comparison import AgentCase, Comparison

__all__ = ["REPORT_CASES"]


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
            body.append(f'<pre class="text">{_long(str(case.reference))}</pre>')
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
