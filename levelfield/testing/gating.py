"""Gating tests and CI on eval sets: run an agent, judge every case by its criteria, fail loudly.

    lf.testing.assert_eval("tests/fixture/", agent, criteria="tests/fixture/test_config.json", trials=2)

or, one line in a pytest file (one test item per case):

    test_home = lf.testing.eval_test("tests/fixture/home.evalset.json", "mypkg.agent:root")
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from typing_extensions import Unpack

from .._core.data.config import RunConfig, RunOptions, run_config
from .._core.data.dataset import EvalCase, EvalDataset, Turn
from .._core.data.types import AgentOutput, AgentRun, ToolCall
from .._core.errors import MissingExtraError
from .._core.results.case_verdicts import CaseVerdict, apply_criteria, format_verdicts
from .._core.results.criteria import (
    Criterion,
    criteria_by_file,
    criteria_metrics,
    find_config,
    load_criteria,
    with_efficiency,
)
from .._core.results.result import EvalResult
from ..formats.files import load_dataset

__all__ = ["GateReport", "check_eval", "assert_eval", "eval_test", "resolve_criteria"]

CriteriaSpec = "str | Path | Mapping[str, Any] | Sequence[Criterion] | None"


@dataclass
class GateReport:
    """The outcome of a gated evaluation: the result, the criteria and every case's verdict."""

    result: EvalResult
    criteria: list[Criterion]
    """Every distinct criterion some case is held to (one list when all cases share them)."""
    verdicts: list[CaseVerdict]
    trials: int = 1

    @property
    def skipped(self) -> dict[str, str]:
        """``{case_id: reason}`` for cases that were not run (conversation scenarios without a simulator)."""
        return dict(getattr(self.result, "skipped", {}) or {})

    @property
    def passed(self) -> bool:
        return all(v.passed for v in self.verdicts)

    @property
    def failures(self) -> list[CaseVerdict]:
        return [v for v in self.verdicts if not v.passed]

    def verdict(self, case_id: str) -> CaseVerdict:
        """The verdict of one case."""
        for v in self.verdicts:
            if v.case_id == case_id:
                return v
        raise KeyError(case_id)

    def table(self) -> str:
        """One line per case: each criterion's pooled score and PASS/FAIL; then the skipped cases."""
        text = format_verdicts(self.verdicts, self.criteria)
        for case_id, reason in self.skipped.items():
            text += f"\nSKIPPED {case_id}: {reason}"
        return text

    def describe(self, verdict: CaseVerdict) -> str:
        """Why one case failed: the reasons, then each turn's expected vs actual trajectory and response."""
        case = next(c for c in self.result.dataset if c.case_id == verdict.case_id)
        lines = [f"FAILED case {case.case_id!r}" + (f" ({case.location})" if case.location else "")]
        lines += [f"  {reason}" for reason in verdict.reasons]
        criteria = [m.criterion for m in verdict.metrics.values()]
        index = _shown_run(verdict, criteria)
        run, scores = verdict.runs[index], verdict.scores[index]
        lines += _judge_reasons(verdict, scores)
        if len(verdict.runs) > 1:
            lines.append(f"  shown: trial {run.trial + 1} of {len(verdict.runs)}")
        lines += _turn_lines(case, run, scores, criteria)
        return "\n".join(lines)

    def message(self) -> str:
        """The AssertionError text: a headline, then every failing case described."""
        failed = self.failures
        crit = ", ".join(dict.fromkeys(c.describe() for c in self.criteria if not c.informational))
        trials = f"; {self.trials} trials each" if self.trials > 1 else ""
        head = f"levelfield: {len(failed)} of {len(self.verdicts)} cases failed ({crit}{trials})"
        return "\n\n".join([head, *(self.describe(v) for v in failed)])


def _shown_run(verdict: CaseVerdict, criteria: Sequence[Criterion]) -> int:
    # Show the run that explains the failure: a crashed one, else the lowest-scoring one.
    for i, run in enumerate(verdict.runs):
        if run.failure:
            return i
    for c in criteria:
        m = verdict.metrics[c.metric]
        if m.evaluated and not m.passed:
            trial_scores = [s if not math.isnan(s) else math.inf for s in m.per_trial]
            return min(range(len(trial_scores)), key=trial_scores.__getitem__)
    return 0


def _judge_reasons(verdict: CaseVerdict, scores: dict[str, Any]) -> list[str]:
    """Why the judge failed a criterion: its explanation (the rubrics it found unmet, the turns it found invalid)."""
    lines = []
    for name, m in verdict.metrics.items():
        explanation = scores.get(f"{m.criterion.score_name}/explanation")
        if m.evaluated and not m.passed and m.criterion.needs_judge and isinstance(explanation, str) and explanation:
            lines.append(f"  {name}, the judge said:")
            lines += [f"    {line}" for line in explanation.splitlines()[:12]]
    return lines


def _format_calls(calls: Sequence[ToolCall] | None) -> str:
    if calls is None:
        return "(no reference given)"
    if not calls:
        return "[] (no tool calls)"
    return "; ".join(
        f"{c.tool_name}({', '.join(f'{k}={json.dumps(v, default=str)}' for k, v in c.tool_input.items())})" for c in calls
    )


def _per_turn(scores: dict[str, Any], criteria: Sequence[Criterion], turns: Sequence[Turn]) -> list[dict[str, float]]:
    # ADK's metrics score every turn, so a per-turn list lines up with the turns one to one.
    out: list[dict[str, float]] = [{} for _ in turns]
    for c in criteria:
        values = scores.get(f"{c.score_name}/per_turn")
        if isinstance(values, list) and len(values) == len(turns):
            for i, value in enumerate(values):
                if value is not None and value == value:  # a turn a criterion did not score (judged once per conversation)
                    out[i][c.metric] = value
    return out


def _conversation_lines(case: EvalCase, run: AgentRun) -> list[str]:
    """A simulated conversation as it went: the plan, then each user message and the agent's answer."""
    scenario = case.conversation_scenario or {}
    conversation = run.conversation
    lines = [f"  plan: {scenario.get('conversation_plan', '')!r}"]
    if conversation is None:
        return [*lines, "  (no conversation: the run failed before its first turn)"]
    for i, said in enumerate(conversation.user_turns):
        out = run.turns[i] if i < len(run.turns) else None
        lines.append(f"  turn {i + 1} user:  {said!r}")
        if out is not None:
            lines.append(f"         agent: {out.response!r}" + (f"  tools: {_format_calls(out.trajectory)}" if out.trajectory else ""))
    lines.append(f"  ended: {conversation.status}" + (f" ({conversation.error})" if conversation.error else ""))
    return lines


def _turn_lines(case: EvalCase, run: AgentRun, scores: dict[str, Any], criteria: Sequence[Criterion]) -> list[str]:
    if case.conversation_scenario is not None and not case.turns:
        return _conversation_lines(case, run)
    turns = case.turns or [
        Turn(prompt=case.prompt or "", reference=case.reference, reference_trajectory=case.reference_trajectory)
    ]
    if case.turns and len(run.turns) == len(turns):
        outputs: list[AgentOutput | None] = list(run.turns)
    elif not case.turns:
        outputs = [run.output or run.partial_output]
    else:
        # A failed run stops at the failing turn: completed turns, then what it had, then nothing.
        outputs = [*run.turns, run.partial_output] if run.failure else list(run.turns)
        outputs += [None] * (len(turns) - len(outputs))
    per_turn = _per_turn(scores, criteria, turns) if case.turns else [{}]
    lines = []
    for i, (turn, out, turn_scores) in enumerate(zip(turns, outputs, per_turn)):
        label = f"  turn {i + 1} of {len(turns)}: " if len(turns) > 1 else "  prompt: "
        lines.append(f"{label}{turn.prompt!r}")
        lines.append(f"    expected trajectory: {_format_calls(turn.reference_trajectory)}")
        actual = _format_calls(out.trajectory) if out is not None else "(no output: the run failed before or here)"
        lines.append(f"    actual trajectory:   {actual}")
        lines.append(f"    expected response:   {turn.reference!r}" if turn.reference is not None else
                     "    expected response:   (no reference given)")
        lines.append(f"    actual response:     {out.response!r}" if out is not None else "    actual response:     (none)")
        if turn_scores:
            lines.append("    scores: " + ", ".join(f"{k}={v:.3f}" for k, v in turn_scores.items()))
    return lines


def _source_path(source: Any) -> Path | None:
    if isinstance(source, Path):
        return source
    if isinstance(source, str):
        from ..formats.files import split_selection

        return split_selection(source)[0]
    return None


def resolve_criteria(criteria: Any, source: Any = None) -> list[Criterion]:
    """Criteria objects from a path, dict or list; when None, the ``test_config.json`` beside ``source``, else ADK's defaults."""
    if criteria is None:
        path = _source_path(source)
        found = find_config(path) if path is not None and path.exists() else None
        return load_criteria(found)
    if isinstance(criteria, Sequence) and not isinstance(criteria, (str, bytes)) and all(
        isinstance(c, Criterion) for c in criteria
    ):
        return list(criteria)
    return load_criteria(criteria)


def _resolve_agent(agent: Any) -> Any:
    if isinstance(agent, str):
        from ..adapters.spec import load_agent_spec

        return load_agent_spec(agent)
    return agent


def check_eval(
    source: Any,
    agent: Any,
    *,
    criteria: Any = None,
    name: str | None = None,
    config: RunConfig | None = None,
    judge: Any = None,
    simulator: Any = None,
    **options: Unpack[RunOptions],
) -> GateReport:
    """Run ``agent`` on ``source`` and judge every case; never raises for failing cases (see ``assert_eval``).

    ADK's efficiency criteria (``tool_call_count_v1``, ``inference_call_count_v1``, ``token_usage_v1``,
    ``invocation_duration_v1``) are reported for every case, averaged per turn, and never fail one.

    Args:
        source: An ``.evalset.json`` / ``.test.json`` file, a folder of them, ``file.json:case_1,case_2``,
            or anything ``lf.load_dataset`` takes.
        agent: Anything ``lf.as_agent`` takes, or a ``module:attr`` spec.
        criteria: A ``test_config.json`` path, ``{"criteria": {...}}`` / ``{metric: threshold}``, or
            Criterion objects; None: each case's criteria come from the ``test_config.json`` beside the
            file it was read from (as ADK resolves them in a folder), else ADK's defaults.
        name: The agent's name in the report (default: the adapter's).
        config: Run options as one ``lf.RunConfig``; no progress bar unless it (or ``progress=True``) asks.
        judge: A chat model, ``"provider:model"``, a function or an agent that judges ADK's judged criteria
            (``final_response_match_v2``, ``rubric_based_*``...); a case that a rubric-based criterion
            would have no rubrics for is an error before any run.
        simulator: ``lf.UserSimulator(model)``, ``lf.testing.ScriptedUser(...)`` or a chat model that plays
            the user of ``conversation_scenario`` cases; without one they are listed as not run.
        **options: Run options by keyword (``trials``, ``concurrency``, ``timeout``...), the fields of
            ``lf.RunConfig``, as for ``lf.evaluate``.

    Returns:
        A ``GateReport``: each case passed or failed against its criteria, with the result.
    """
    from .._entry.evaluation import evaluate

    cfg = run_config(config, **options) if config is not None else run_config(**{"progress": False, **options})
    dataset: EvalDataset = load_dataset(source)
    if criteria is None:
        # As ADK does: each file's cases are held to the test_config.json beside that file.
        per_case = criteria_by_file({c.case_id: c.file for c in dataset}, _source_path(source))
    else:
        resolved = resolve_criteria(criteria, source)
        per_case = {c.case_id: resolved for c in dataset}
    # As ADK 2.x does, the efficiency criteria are reported on every eval (informational, per turn).
    per_case = {case_id: with_efficiency(group) for case_id, group in per_case.items()}
    metrics = criteria_metrics(per_case, judge=judge)
    _check_cases(dataset, per_case, metrics)
    result = evaluate(dataset, _resolve_agent(agent), metrics, name=name, config=cfg, simulator=simulator)
    distinct = list(dict.fromkeys(c for group in per_case.values() for c in group))
    return GateReport(result, distinct, apply_criteria(result, per_case), cfg.trials)


def _check_cases(dataset: EvalDataset, per_case: dict[str, list[Criterion]], metrics: Sequence[Any]) -> None:
    """Each metric that can check a case before it runs (e.g. that it has rubrics) checks the cases held to it."""
    by_name = {m.name: m for m in metrics}
    for case in dataset:
        for criterion in per_case.get(case.case_id, []):
            check = getattr(by_name.get(criterion.score_name), "check_case", None)
            if check is not None:
                check(case)


def assert_eval(
    source: Any,
    agent: Any,
    *,
    criteria: Any = None,
    name: str | None = None,
    config: RunConfig | None = None,
    judge: Any = None,
    simulator: Any = None,
    **options: Unpack[RunOptions],
) -> GateReport:
    """Like :func:`check_eval`, but raise ``AssertionError`` listing every failing case.

    Args:
        source: The cases (see :func:`check_eval`).
        agent: The agent (see :func:`check_eval`).
        criteria: The criteria (see :func:`check_eval`).
        name: The agent's name in the report.
        config: Run options as one ``lf.RunConfig``.
        judge: The judge of ADK's judged criteria.
        simulator: The simulated user of ``conversation_scenario`` cases.
        **options: Run options by keyword, the fields of ``lf.RunConfig``.

    Returns:
        The ``GateReport`` when every case passes.

    Raises:
        AssertionError: A case failed; the message gives, for each failing case, the criteria it missed
            and each turn's expected vs actual trajectory and response.
    """
    report = check_eval(source, agent, criteria=criteria, name=name, config=config, judge=judge, simulator=simulator,
                        **options)
    if not report.passed:
        raise AssertionError(report.message())
    return report


def eval_test(
    source: Any,
    agent: Any,
    *,
    criteria: Any = None,
    trials: int = 1,
    **options: Any,
) -> Callable[..., None]:
    """A pytest test function with one item per case: ``test_home = lf.testing.eval_test(path, agent)``.

    The evaluation runs once, when the first item runs; every item then asserts its own case.
    ``--lf-trials N`` and ``--lf-criteria PATH`` (from levelfield's pytest plugin) override
    ``trials`` and ``criteria`` from the command line. Needs pytest (``levelfield[pytest]``).
    """
    try:
        import pytest
    except ImportError:
        raise MissingExtraError("pytest", "pytest", "lf.testing.eval_test") from None

    dataset = load_dataset(source)  # a bad file fails at collection, naming the file and field
    ids = [c.case_id for c in dataset]
    reports: dict[tuple[int, Any], GateReport] = {}

    @pytest.mark.parametrize("lf_case_id", ids)
    def test_case(lf_case_id: str, request: Any) -> None:
        run_trials = request.config.getoption("lf_trials", default=None) or trials
        run_criteria = request.config.getoption("lf_criteria", default=None) or criteria
        key = (run_trials, run_criteria if not isinstance(run_criteria, (dict, list)) else id(run_criteria))
        if key not in reports:
            chosen = resolve_criteria(run_criteria, source) if run_criteria is not None else None
            reports[key] = check_eval(dataset, agent, criteria=chosen, trials=run_trials, **options)
        report = reports[key]
        verdict = report.verdict(lf_case_id)
        if not verdict.passed:
            raise AssertionError(report.describe(verdict))

    test_case.__doc__ = f"Every case of {source} meets its criteria."
    return test_case
