"""The pages of ``levelfield view``, rendered on the server as plain HTML (a little script only polls).

Here the shell, the runs list, one run and one case; ``diff_pages`` compares two runs.

Every string that came from a run (folder and agent names, prompts, responses, tool calls,
errors, explanations) goes through the report's own escaping (:func:`levelfield.report.html.escape`,
which also shows bidirectional overrides as visible marks), and the server sends a
Content-Security-Policy that allows no inline script and nothing from another origin, so text
that holds markup shows as text.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from .._core.data.dataset import EvalCase
from .._core.data.jsonsafe import to_jsonable
from .._core.data.types import AgentRun, ToolCall
from .._core.score.metrics.base import Score
from .._core.stats.change import describe_change
from ..report.html import agent_color_of, breakable, call_text, long_text, number, score_chip
from ..report.html import escape as esc
from .catalog import Baseline
from .index import RunIndex
from .query import PER_PAGE, CaseQuery, page_of
from .transcript import Step, transcript

__all__ = ["shell", "runs_page", "run_page", "case_page", "not_found_page", "RunRow"]

_LABEL = {"match": "match", "mismatch": "args differ", "extra": "extra", "missing": "missing"}


def href(path: str, **params: Any) -> str:
    """A link to one of the view's pages with ``params`` as its query (empty ones left out), escaped for an attribute."""
    kept = {k: v for k, v in params.items() if v not in (None, "", False)}
    return esc(path + ("?" + urlencode(kept) if kept else ""))


def shell(title: str, body: str, *, crumbs: Sequence[tuple[str, str]] = (), poll: str = "/api/version",
          autoreload: bool = False) -> str:
    """A whole page: the report's stylesheet and the view's, the breadcrumbs, ``body``; it polls ``poll`` for changes."""
    trail = "".join(f'<a href="{url}">{esc(label)}</a><span class="sep">›</span>' for label, url in crumbs)
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" href="data:,">'
        f"<title>{esc(title)} · levelfield view</title>"
        '<link rel="stylesheet" href="/static/report.css"><link rel="stylesheet" href="/static/view.css">'
        '<script src="/static/view.js" defer></script></head>'
        f'<body data-poll="{esc(poll)}" data-autoreload="{int(autoreload)}">'
        f'<header class="bar"><nav class="crumbs"><a href="/">levelfield view</a><span class="sep">›</span>{trail}'
        f'<span class="here">{esc(title)}</span></nav>'
        '<p id="updated" hidden>New results have landed. <a href="">Reload</a></p></header>'
        f"<main>{body}</main>"
        "<footer>Served by levelfield view from the run records on this machine; nothing is fetched from elsewhere.</footer>"
        "</body></html>\n"
    )


def not_found_page(what: str) -> str:
    """The page of a run or case that is not there."""
    return shell("not found", f'<h2>Not found</h2><p>{esc(what)}</p><p><a href="/">All runs</a></p>')


def _when(iso: str) -> str:
    try:
        return dt.datetime.fromisoformat(iso).astimezone().strftime("%Y-%m-%d %H:%M:%S")
    except (TypeError, ValueError):
        return iso or "–"


def _status(index: RunIndex) -> str:
    planned = len(index.agents) * len(index.case_ids) * index.trials
    if index.status == "complete":
        return '<span class="status ok">complete</span>'
    done = f' <span class="ci">{len(index.runs):,} of {planned:,} runs</span>' if planned else ""
    return f'<span class="status running">{esc(index.status)}</span>{done}'


def _scores_line(index: RunIndex, agent: str, color: str) -> str:
    chips = "".join(
        f'<span class="mscore"><span class="mname">{esc(m)}</span>{score_chip(index.mean(m, agent), f"{agent} · {m} (mean)")}</span>'
        for m in index.metrics
    )
    return (f'<div class="agentline"><span class="aname" style="color:{color}">{esc(agent)}</span>'
            f"{_a2a_mark(index, agent)}{chips}</div>")


def _a2a_mark(index: RunIndex, agent: str) -> str:
    """Beside an A2A agent's name: whether its preflight found it conforming (the checks on the run page)."""
    found = getattr(index, "a2a_preflight", {}).get(agent)
    if not isinstance(found, dict):
        return ""
    if "error" in found:
        return f' <span class="ci" title="{esc(found["error"])}">A2A: not checked</span>'
    failed = [c for c in found.get("checks") or [] if isinstance(c, dict) and c.get("status") == "fail"]
    if not failed:
        return ' <span class="ci" title="the A2A preflight passed">A2A ✓</span>'
    names = ", ".join(f"{c.get('name')} {c.get('version') or ''}".strip() for c in failed)
    return f' <span class="fail" title="failed checks: {esc(names)}">A2A: does not conform ({len(failed)})</span>'


# -- the runs list ---------------------------------------------------------------------------------

RunRow = tuple[str, RunIndex, Baseline]
"""(run id, its index, its standing against the baseline)."""

_SORTS = {
    "when": lambda r: r[1].created,
    "run": lambda r: r[0].lower(),
    "dataset": lambda r: r[1].dataset.lower(),
    "cases": lambda r: len(r[1].case_ids),
    "failures": lambda r: r[1].failures,
    "status": lambda r: r[1].status,
}


def runs_page(rows: Sequence[RunRow], params: Mapping[str, str], every: Sequence[str]) -> str:
    """Every run, filtered and sorted as ``params`` ask; two radio columns pick the runs to diff."""
    sort = params.get("sort", "when") if params.get("sort") in _SORTS else "when"
    desc = params.get("desc", "1" if sort == "when" else "") == "1"
    q = params.get("q", "").strip().lower()
    agent = params.get("agent", "")
    failed = params.get("failed", "") in ("1", "on")
    base = params.get("baseline", "")
    agents = sorted({a for _, index, _ in rows for a in index.agents})
    shown = [
        r for r in rows
        if (not q or q in f"{r[0]} {r[1].dataset} {' '.join(r[1].agents)}".lower())
        and (not agent or agent in r[1].agents) and (not failed or r[1].failures)
    ]
    shown.sort(key=_SORTS[sort], reverse=desc)

    def head(key: str, label: str) -> str:
        flip = "" if (key == sort and desc) else "1"
        arrow = (" ▼" if desc else " ▲") if key == sort else ""
        link = href("/", **{**params, "sort": key, "desc": flip})
        return f'<th><a class="sort" href="{link}">{esc(label)}{arrow}</a></th>'

    body = []
    for run_id, index, standing in shown:
        palette = {a: agent_color_of(i) for i, a in enumerate(index.agents)}
        scores = "".join(_scores_line(index, a, palette[a]) for a in index.agents) or '<span class="muted">no scores yet</span>'
        problem = f'<div class="fail">{esc(index.problem)}</div>' if index.problem else ""
        body.append(
            f'<tr data-run="{esc(run_id)}"><td class="pick"><input type="radio" name="a" value="{esc(run_id)}" '
            f'aria-label="A: {esc(run_id)}"></td><td class="pick"><input type="radio" name="b" value="{esc(run_id)}" '
            f'aria-label="B: {esc(run_id)}"></td>'
            f'<td class="num">{esc(_when(index.created))}</td>'
            f'<td><a class="runlink" href="{href("/run", run=run_id)}">{breakable(run_id)}</a>{problem}</td>'
            f"<td>{esc(index.kind)}</td><td title=\"{esc(index.dataset)}\">{esc(Path(index.dataset).name or index.dataset)}</td>"
            f'<td class="num">{len(index.case_ids):,}</td><td class="scorescell">{scores}</td>'
            f'<td class="num">{_failures(index)}</td><td>{_status(index)}</td><td>{_standing(standing)}</td></tr>'
        )
    options = "".join(f'<option value="{esc(a)}"{" selected" if a == agent else ""}>{esc(a)}</option>' for a in agents)
    runs_opts = "".join(f'<option value="{esc(r)}"{" selected" if r == base else ""}>{esc(r)}</option>' for r in every)
    filters = (
        '<form class="controls" method="get" action="/">'
        f'<input type="search" name="q" value="{esc(params.get("q", ""))}" placeholder="run, dataset or agent" aria-label="search runs">'
        f'<label>agent <select name="agent"><option value="">any</option>{options}</select></label>'
        f'<label><input type="checkbox" name="failed" value="1"{" checked" if failed else ""}> with failed runs</label>'
        f'<label>baseline run <select name="baseline"><option value="">each run\'s own</option>{runs_opts}</select></label>'
        f'<input type="hidden" name="sort" value="{esc(sort)}"><input type="hidden" name="desc" value="{int(desc)}">'
        '<button type="submit">apply</button></form>'
    )
    table = (
        '<form method="get" action="/diff" id="diff-form"><div class="tablewrap"><table class="runs"><thead><tr>'
        '<th title="the baseline side of a diff">A</th><th title="the new side of a diff">B</th>'
        + head("when", "when") + head("run", "run") + "<th>kind</th>" + head("dataset", "dataset") + head("cases", "cases")
        + "<th>mean scores</th>" + head("failures", "failed runs") + head("status", "status")
        + f"<th>vs baseline{' ' + esc(base) if base else ''}</th></tr></thead><tbody>" + "".join(body) + "</tbody></table></div>"
        '<p><button type="submit" id="diff-button">Diff A → B</button> <span class="muted">pick an older run as A and a newer one '
        "as B: the cases whose score changed, both transcripts side by side, and whether the change is significant.</span></p></form>"
    )
    count = f'<p class="muted" id="run-count">{len(shown)} of {len(rows)} runs</p>'
    empty = "" if rows else '<p class="muted">No run records found yet: run an evaluation with --out DIR (or out="DIR") into a served folder; it shows up here as it runs.</p>'
    return shell("runs", f"<h2>Runs</h2>{filters}{count}{empty}{table}", autoreload=True)


def _failures(index: RunIndex) -> str:
    n = index.failures
    return f'<span class="fail">{n:,}</span>' if n else "0"


def _standing(b: Baseline) -> str:
    if b.verdict == "pass":
        return f'<span class="pass" title="no significant regression against {esc(b.against)}">pass</span>'
    if b.verdict == "regressed":
        worst = "; ".join(f"{c.metric} ({c.agent})" for c in b.regressions[:3])
        return f'<span class="fail" title="{esc(describe_change(b.regressions[0]))}">regressed</span> <span class="ci">{esc(worst)}</span>'
    return f'<span class="muted" title="{esc(b.note)}">–</span>'


# -- one run -------------------------------------------------------------------------------------


def run_meta(run_id: str, index: RunIndex) -> str:
    """The line under a run's title: kind, dataset, cases, agents, trials, status, when."""
    return (
        f'<p class="meta">{esc(index.kind)} · {esc(index.dataset)} · {len(index.case_ids):,} cases · agents: '
        f'{esc(", ".join(index.agents))} · {index.trials} trial{"s" if index.trials != 1 else ""} per case · '
        f"{_status(index)} · {esc(_when(index.created))}</p>"
    )


def run_page(run_id: str, index: RunIndex, query: CaseQuery, others: Sequence[str], *, report: tuple[str, str] | None,
             why_not: str) -> str:
    """A run: the report's sections (``report``: its nav and body, cases replaced) or the means, and the paged cases."""
    cases = cases_section(run_id, index, query)
    problem = f'<p class="fail">{esc(index.problem)}</p>' if index.problem else ""
    choices = "".join(f'<option value="{esc(r)}">{esc(r)}</option>' for r in others if r != run_id)
    diff = (
        f'<form class="controls" method="get" action="/diff"><input type="hidden" name="b" value="{esc(run_id)}">'
        f'<label>diff against an earlier run (A) <select name="a">{choices}</select></label>'
        '<button type="submit">diff</button></form>' if choices else ""
    )
    if report is not None:
        nav, body = report
    else:
        nav = '<nav><a href="#summary">Summary</a><a href="#cases">Cases</a></nav>'
        body = _means_section(index, why_not) + cases
    head = f"<h1>{esc(run_id)}</h1>{run_meta(run_id, index)}{nav}{problem}{diff}"
    return shell(run_id, head + body, crumbs=[], poll=f"/api/version?{urlencode({'run': run_id})}",
                 autoreload=index.status != "complete")


def _means_section(index: RunIndex, why_not: str) -> str:
    rows = []
    for m in index.metrics:
        rows.append(f"<tr><td><b>{esc(m)}</b></td>" + "".join(f'<td class="num">{number(index.mean(m, a))}</td>' for a in index.agents) + "</tr>")
    fails = "".join(
        f'<td class="num">{sum(1 for r in index.runs.values() if r.agent == a and r.failure):,}</td>' for a in index.agents
    )
    head = "".join(f'<th class="num">{esc(a)}</th>' for a in index.agents)
    note = f'<p class="muted">{esc(why_not)}</p>' if why_not else ""
    return (
        f'<section id="summary"><h2>Summary</h2><p class="muted">Mean over the cases, {esc(index.stats.failed_runs)} rule '
        f"for failed runs.</p>{note}<div class=\"tablewrap\"><table class=\"summary\"><thead><tr><th></th>{head}</tr></thead>"
        f"<tbody>{''.join(rows)}<tr><td>failed runs</td>{fails}</tr></tbody></table></div></section>"
    )


def cases_section(run_id: str, index: RunIndex, query: CaseQuery) -> str:
    """The run's cases, filtered and paged on the server, each linking to its transcript."""
    from .query import select_cases

    chosen = select_cases(index, query)
    items, page, pages = page_of(chosen, query.page)
    agents = [query.agent] if query.agent in index.agents else index.agents
    palette = {a: agent_color_of(i) for i, a in enumerate(index.agents)}
    scores = {(m, a): index.case_scores(m, a) for m in index.metrics for a in agents}
    rows = []
    for i in items:
        case_id = index.case_ids[i]
        lines = []
        for a in agents:
            runs = [r for r in index.runs_of(i) if r.agent == a]
            failed = [r for r in runs if r.failure]
            fail = (f' <span class="fail">failed: <span class="etype">{esc(", ".join(sorted({r.error_type or "error" for r in failed})))}'
                    "</span></span>" if failed else "")
            chips = "".join(score_chip(scores[(m, a)][i], f"{a} · {m}", name=m) for m in index.metrics)
            lines.append(f'<div class="agentline"><span class="aname" style="color:{palette.get(a, "#333")}">{esc(a)}</span>'
                         f"{chips}{fail}</div>")
        prompt = index.case_prompts[i]
        rows.append(
            f'<tr class="caserow"><td><a class="caselink" href="{href("/case", run=run_id, case=case_id)}">{esc(case_id)}</a></td>'
            f'<td class="prompt">{esc(prompt[:200])}</td><td>{"".join(lines)}</td></tr>'
        )
    metric_opts = "".join(f'<option value="{esc(m)}"{" selected" if m == query.metric else ""}>{esc(m)}</option>' for m in index.metrics)
    agent_opts = "".join(f'<option value="{esc(a)}"{" selected" if a == query.agent else ""}>{esc(a)}</option>' for a in index.agents)
    error_opts = "".join(f'<option value="{esc(e)}"{" selected" if e == query.error else ""}>{esc(e)}</option>' for e in index.error_types)
    below = "" if query.below is None else f"{query.below:g}"
    form = (
        f'<form class="controls" method="get" action="/run#cases" id="case-filters"><input type="hidden" name="run" value="{esc(run_id)}">'
        f'<input type="search" name="q" id="case-search" value="{esc(query.q)}" placeholder="case id, prompt, response or error" aria-label="search cases">'
        f'<label>agent <select name="agent"><option value="">all</option>{agent_opts}</select></label>'
        f'<label>metric <select name="metric"><option value="">–</option>{metric_opts}</select></label>'
        f'<label>below <input type="number" name="below" step="any" min="0" max="1" value="{esc(below)}" class="small" aria-label="score below"></label>'
        f'<label><input type="checkbox" name="failed" value="1"{" checked" if query.failed else ""}> failed runs</label>'
        f'<label>error <select name="error"><option value="">any</option>{error_opts}</select></label>'
        f'<label>order <select name="sort"><option value="">as in the dataset</option><option value="score"{" selected" if query.sort == "score" else ""}>'
        "lowest score first</option></select></label><button type=\"submit\">filter</button>"
        + (f' <a href="{href("/run", run=run_id)}#cases">clear</a>' if query.active else "") + "</form>"
    )
    table = (
        '<div class="tablewrap"><table class="cases"><thead><tr><th>case</th><th>prompt</th>'
        f'<th>scores ({esc(", ".join(index.metrics))})</th></tr></thead><tbody>{"".join(rows)}</tbody></table></div>'
        if rows else '<p class="muted" id="no-cases">No case matches these filters.</p>'
    )
    first = (page - 1) * PER_PAGE + 1 if chosen else 0
    count = f'<p class="muted" id="case-count">cases {first:,}–{first + len(items) - 1 if items else 0:,} of {len(chosen):,}' + (
        f" (filtered from {len(index.case_ids):,})" if query.active else "") + "</p>"
    pager = _pager("/run?" + urlencode({"run": run_id}), query, page, pages)
    return f'<section id="cases"><h2>Cases</h2>{form}{count}{table}{pager}</section>'


def _pager(base: str, query: CaseQuery, page: int, pages: int) -> str:
    if pages <= 1:
        return ""
    def link(p: int, label: str) -> str:
        extra = query.link(page=p)
        return f'<a href="{esc(base + ("&" + extra if extra else ""))}#cases">{esc(label)}</a>'
    parts = [link(1, "« first") if page > 1 else "", link(page - 1, "‹ previous") if page > 1 else "",
             f'<span class="muted">page {page:,} of {pages:,}</span>',
             link(page + 1, "next ›") if page < pages else "", link(pages, "last »") if page < pages else ""]
    return f'<p class="pager">{" ".join(p for p in parts if p)}</p>'


# -- one case ------------------------------------------------------------------------------------


def _args(value: Any) -> str:
    short = json.dumps(to_jsonable(value), ensure_ascii=False, sort_keys=True, default=str)
    # One line when it reads in one; indented when it is long enough to need it.
    return short if len(short) <= 80 else json.dumps(to_jsonable(value), ensure_ascii=False, indent=1, sort_keys=True, default=str)


def _call(step: Step) -> str:
    m = step.mark
    assert m is not None
    call: ToolCall = m.predicted if m.predicted is not None else m.reference  # type: ignore[assignment]
    parts = [f'<div class="step call {m.status}"><div class="who"><span class="tag">{_LABEL[m.status]}</span>tool call</div>'
             f'<div class="what"><code class="tool">{esc(call.tool_name)}</code>']
    if call.tool_input:
        parts.append(f'<pre class="args">{long_text(_args(call.tool_input), 4000)}</pre>')
    if m.status == "missing" and step.cut_short:
        parts.append('<div class="expected">expected here by the reference; the run failed before making it</div>')
    elif m.status == "missing":
        parts.append('<div class="expected">expected here by the reference; the agent did not make it</div>')
    if m.status == "mismatch" and m.reference is not None:
        parts.append(f'<div class="expected">expected {esc(call_text(m.reference))}</div>')
    if m.predicted is not None and m.predicted.tool_output is not None:
        out = m.predicted.tool_output
        parts.append(f'<div class="result"><span class="muted">result</span><pre class="args">'
                     f'{long_text(out if isinstance(out, str) else _args(out), 4000)}</pre></div>')
    if m.predicted is not None and m.predicted.error:
        parts.append(f'<div class="fail">tool error: {long_text(m.predicted.error, 2000)}</div>')
    parts.append("</div></div>")
    return "".join(parts)


_WHO = {"system": "system", "user": "user", "assistant": "assistant", "tool": "tool", "intermediate": "model",
        "answer": "final answer"}


def render_steps(steps: Sequence[Step]) -> str:
    """A transcript as HTML, one block per step."""
    out = []
    for s in steps:
        if s.kind == "turn":
            out.append(f'<div class="turnmark">{esc(s.text)}</div>')
        elif s.kind == "call":
            out.append(_call(s))
        elif s.kind == "handoff":
            out.append(f'<div class="step handoff"><div class="who">hand-off</div><div class="what">→ sub-agent '
                       f"<b>{esc(s.agent)}</b></div></div>")
        elif s.kind == "error":
            out.append(f'<div class="step error"><div class="who">failed</div><div class="what fail">{long_text(s.text, 4000)}</div></div>')
        else:
            out.append(f'<div class="step {esc(s.kind)}"><div class="who">{esc(_WHO.get(s.kind, s.kind))}</div>'
                       f'<pre class="text">{long_text(s.text)}</pre></div>')
    return f'<div class="transcript">{"".join(out)}</div>'


def _score_rows(scores: Mapping[str, Score], metrics: Sequence[str], other: Mapping[str, Score] | None = None) -> str:
    rows = []
    for m in list(metrics) + [k for k in scores if k not in metrics]:
        s = scores.get(m)
        if s is None:
            rows.append(f'<li><span class="mname">{esc(m)}</span> <span class="muted">not scored</span></li>')
            continue
        why = f'<div class="why">{long_text(s.explanation, 4000)}</div>' if s.explanation else ""
        if s.failed:
            why += f'<div class="fail">the metric failed: {long_text(s.error, 2000)}</div>'
        if s.usage is not None:
            why += f'<div class="muted">judge tokens: {s.usage.total_tokens:,}</div>'
        changed = ""
        if other is not None and m in other and _moved(other[m].value, s.value):
            changed = " changed"
        rows.append(f'<li class="metricscore{changed}" data-metric="{esc(m)}">{score_chip(s.value, m)} <span class="mname">{esc(m)}</span>{why}</li>')
    return f'<ul class="scorelist">{"".join(rows)}</ul>'


def _moved(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) != math.isnan(b)
    return abs(a - b) > 1e-9


def _usage(run: AgentRun) -> str:
    bits = [f"latency {number(run.latency_in_seconds, 2)} s"]
    if run.attempts > 1:
        bits.append(f"{run.attempts} attempts")
    out = run.output or run.partial_output
    usage = out.usage if out is not None else None
    if run.turns and usage is None:
        total = [t.usage for t in run.turns if t.usage is not None]
        if total:
            usage = total[0]
            for u in total[1:]:
                usage = usage + u
    if usage is not None:
        cached = f" ({usage.cache_read_tokens:,} from cache)" if usage.cache_read_tokens else ""
        thought = f" ({usage.reasoning_tokens:,} reasoning)" if usage.reasoning_tokens else ""
        bits.append(f"tokens {usage.input_tokens:,} in{cached} · {usage.output_tokens:,} out{thought} · "
                    f"{usage.total_tokens:,} total")
    return f'<p class="usage muted">{" · ".join(esc(b) for b in bits)}</p>'


def run_column(index: RunIndex, case: EvalCase, run: AgentRun, scores: Mapping[str, Score], *, title: str, color: str,
               other: Mapping[str, Score] | None = None) -> str:
    """One run of a case: its transcript, its scores with the reasons given, its usage."""
    trial = f' <span class="muted">trial {run.trial + 1}</span>' if index.trials > 1 else ""
    policy = ""
    return (
        f'<div class="col runcol" data-agent="{esc(run.agent_name)}"><h4 style="color:{color}">{esc(title)}{trial}</h4>'
        f"{render_steps(transcript(case, run, index.matcher))}{_traceback(run)}<h5>Scores</h5>{_score_rows(scores, index.metrics, other)}"
        f"{policy}{_usage(run)}</div>"
    )


def _traceback(run: AgentRun) -> str:
    """A failed run's traceback (the agent's, as the record keeps it), folded."""
    if not run.traceback:
        return ""
    return f'<details class="meta traceback"><summary>traceback</summary><pre class="text">{esc(run.traceback)}</pre></details>'


def reference_column(case: EvalCase) -> str:
    """The case's reference answer and tool calls (per turn for a multi-turn case)."""
    parts = ['<div class="col reference"><h4>reference</h4>']
    if case.turns:
        for i, t in enumerate(case.turns):
            parts.append(f'<div class="turnmark">turn {i + 1}</div>' + _reference_body(t.reference, t.reference_trajectory))
    else:
        parts.append(_reference_body(case.reference, case.reference_trajectory))
    parts.append("</div>")
    return "".join(parts)


def _reference_body(reference: str | None, calls: Sequence[ToolCall] | None) -> str:
    text = (f'<pre class="text">{long_text(reference)}</pre>' if reference is not None
            else '<p class="muted">no reference answer</p>')
    if calls is None:
        return text + '<p class="muted">no reference tool calls</p>'
    if not calls:
        return text + '<p class="muted">no tool calls expected</p>'
    items = "".join(f'<li class="match"><code class="tool">{esc(c.tool_name)}</code><pre class="args">{long_text(_args(c.tool_input), 4000)}</pre></li>'
                    for c in calls)
    return text + f'<ol class="calls">{items}</ol>'


def _grid(columns: Sequence[str]) -> str:
    n = max(len(columns), 1)
    return f'<div class="grid casegrid" style="grid-template-columns:repeat({min(n, 4)},minmax(0,1fr))">{"".join(columns)}</div>'


def case_page(run_id: str, index: RunIndex, position: int, case: EvalCase,
              runs: Sequence[tuple[AgentRun, Mapping[str, Score]]]) -> str:
    """One case of a run: the reference beside every agent's transcript, step by step."""
    palette = {a: agent_color_of(i) for i, a in enumerate(index.agents)}
    columns = [reference_column(case)] + [
        run_column(index, case, run, index.counted(position, run, dict(scores)), title=run.agent_name,
                   color=palette.get(run.agent_name, "#333"))
        for run, scores in runs
    ]
    if not runs:
        columns.append('<div class="col"><p class="muted">no run of this case is recorded yet</p></div>')
    ids = index.case_ids
    near = []
    if position > 0:
        near.append(f'<a href="{href("/case", run=run_id, case=ids[position - 1])}">‹ previous case</a>')
    if position + 1 < len(ids):
        near.append(f'<a href="{href("/case", run=run_id, case=ids[position + 1])}">next case ›</a>')
    body = (
        f'<h1>case {esc(case.case_id)}</h1>{run_meta(run_id, index)}<p class="near">{" ".join(near)}</p>'
        + _case_head(case) + _grid(columns)
    )
    return shell(f"case {case.case_id}", body, crumbs=[(run_id, href("/run", run=run_id))],
                 poll=f"/api/version?{urlencode({'run': run_id})}")


def _case_head(case: EvalCase) -> str:
    parts = []
    if case.metadata:
        parts.append(f'<details class="meta"><summary>metadata</summary><pre class="text">{long_text(_args(case.metadata), 4000)}</pre></details>')
    if case.state:
        parts.append(f'<details class="meta"><summary>initial state</summary><pre class="text">{long_text(_args(case.state), 4000)}</pre></details>')
    return "".join(parts)
