"""The report's read of the scores: the verdict, how to read them, the summary, pairwise differences, robustness, noise."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from .._core.score.metrics.base import FAILED_AS_ZERO, FAILED_LEFT_OUT
from ..comparison._text import evaluator_lines
from ..comparison._verdict import early_stop_line, failure_rule, other_rule, untestable_reason, verdict

if TYPE_CHECKING:
    from ..comparison._comparison import Comparison


from .markup import _breakable, _color, _esc, _fmt, _fmt_p, _isnan, _metric_link, _table, _usd

__all__: list[str] = []  # private parts of the report page: levelfield.report.html puts them together


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
        f"Ranges: Wilson intervals for pass/fail scores, Student's t otherwise; trials are {trials} per case "
        "first. Two agents are compared case by case: for pass/fail scores, the difference of their pass rates "
        "with Tango's score interval and the McNemar score test it inverts; otherwise the mean difference with "
        "the paired t interval and test. Both were checked by simulation to hold the true difference at least "
        "93% of the time at a nominal 95% (from 10 to 300 cases). With several agents, a pair that could not be significant whatever its scores "
        "(for instance two agents with the same score on every case) is left out of the multiple-comparison "
        "adjustment (Tarone, Biometrics 1990); Holm's adjustment runs over the pairs that are left, and each "
        "pairwise range is shown at the level Holm decided its pair at, so it leaves out 0 exactly when the pair "
        "is significant. "
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


def _cost_cell(row: Any) -> str:
    if _isnan(row["cost_usd/mean"]):
        note = row.get("cost_usd/note")
        return f'<span class="muted" title="{_esc(note if isinstance(note, str) else "")}">unknown</span>'
    return (f'{_usd(row["cost_usd/mean"])} <span class="ci">[{_usd(row.get("cost_usd/ci_low"))}, '
            f'{_usd(row.get("cost_usd/ci_high"))}]</span>')


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


def _pairwise_section(cmp: Comparison) -> str:
    if len(cmp.agents) < 2:
        return ""
    out = ['<section id="pairwise"><h2>Pairwise</h2><p class="muted">Difference = A − B over paired cases (the '
           "difference of pass rates, or of mean scores); "
           "wins/ties/losses count cases where A scored higher/the same/lower. p and the range are adjusted for the "
           "number of pairs that could differ significantly (pairs that cannot are left out); significant: adjusted "
           f"p below {1 - cmp.confidence:.2g}.</p>"]
    for metric in cmp.metric_names:
        table = cmp.pairwise(metric)
        levels = {round(float(x), 12) for x in table["ci_level"]} if len(table) else set()
        same = len(levels) <= 1
        shown = f"range ({next(iter(levels)) * 100:.4g}%)" if same and levels else "range (each at its row's level)"

        def level_cell(r: Any, same: bool = same) -> str:
            return "" if same else f" {float(r.ci_level) * 100:.4g}%"

        headers = [("A", False), ("B", False), ("cases", True), ("A − B", True), (shown, True),
                   ("p", True), ("p adjusted", True), ("test", False), ("W / T / L", True), ("", False)]
        rows = []
        for r in table.itertuples(index=False):
            if r.significant:
                mark = '<span class="sig">significant</span>'
            elif not r.in_family:
                why = _esc(untestable_reason(r.wins + r.losses, float(r.p_min), 1 - cmp.confidence))
                mark = f'<span class="ns">cannot be significant: {why}</span>'
            else:
                mark = '<span class="ns">not significant</span>'
            rows.append([
                _breakable(r.agent_a), _breakable(r.agent_b), _esc(r.n), _fmt(r.difference),
                f'<span class="ci">[{_esc(_fmt(r.ci_low))}, {_esc(_fmt(r.ci_high))}]{level_cell(r)}</span>', _fmt_p(r.p_value),
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


def _failed_cell(r: Any) -> str:
    """"0/18 / 4/18": an agent's failed runs clean and under faults (– when not known)."""
    runs = getattr(r, "runs", None)
    if runs is None or _isnan(runs):
        return "–"
    return f"{int(r.failed_clean)}/{int(runs)} / {int(r.failed_faulted)}/{int(runs)}"


def _robustness_section(cmp: Comparison) -> str:
    """"How it holds up": each agent's drop under seeded tool faults (``compare(..., faults=...)``)."""
    found = getattr(cmp, "robustness", None)
    if found is None:
        return ""
    out = ['<section id="robustness"><h2>How it holds up</h2><p class="muted">'
           f"Each agent ran clean and under {_esc(found.faults)} on the same {found.cases} cases"
           f"{f' × {found.trials} trials' if found.trials > 1 else ''}. Drop = clean − faulted (failed runs score 0), "
           "tested as the pairs are (McNemar's score test with Tango's range for pass/fail scores, the paired t "
           "otherwise); each range inverts its test at the level Holm decided it at across the agents; significant: "
           f"adjusted p below {1 - found.confidence:.2g}.</p>"]
    headers = [("agent", False), ("metric", False), ("cases", True), ("clean", True), ("faulted", True),
               ("drop", True), ("range", True), ("p adjusted", True), ("failed runs clean / under faults", True),
               ("", False)]
    rows = []
    for r in found.drops.itertuples(index=False):
        if r.n == 0:
            mark = '<span class="ns">no case scored on both sides</span>'
        elif r.significant:
            mark = f'<span class="sig">{"drops under faults" if r.drop > 0 else "higher under faults"}</span>'
        else:
            mark = '<span class="ns">no significant drop</span>'
        rows.append([_breakable(r.agent), _esc(r.metric), _esc(r.n), _fmt(r.clean), _fmt(r.faulted), _fmt(r.drop),
                     f'<span class="ci">[{_esc(_fmt(r.ci_low))}, {_esc(_fmt(r.ci_high))}] {r.ci_level * 100:.4g}%</span>',
                     _fmt_p(r.p_holm), _failed_cell(r), mark])
    out.append(_table(headers, rows, "robustness"))
    if found.left_out:
        items = "".join(f"<li><b>{_esc(a)}</b>: {_esc(why)}</li>" for a, why in found.left_out.items())
        out.append(f'<p class="muted">Left out: agents that could not be given faults (a drop of 0 would say they '
                   f'held up when they were never tested):</p><ul class="verdict">{items}</ul>')
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
        from ..comparison._robustness import consistency_parts

        for c in found.consistency.itertuples():
            parts = [_esc(part) for part in consistency_parts(c)]
            if parts:
                items.append(f"<li><b>{_esc(c.agent)}</b> over {c.trials} clean trials: {'; '.join(parts)}</li>")
        if items:
            out.append(f'<p class="muted">Consistency ({found.confidence:.0%} exact intervals):</p>'
                       f'<ul class="verdict">{"".join(items)}</ul>')
    out.append("</section>")
    return "".join(out)


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
