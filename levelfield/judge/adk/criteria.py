"""ADK's judged criteria by name: their factories, a test_config.json criterion's options read, and their registration."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..._core.errors import MetricError
from ..._core.results.criteria import Criterion, CriterionKind, read_keys, register_criterion
from ..._core.score.metrics.base import Metric
from ..._core.score.metrics.registry import register_judged_metric
from ..config import JudgeConfig
from ..rubrics import Rubric, check_adk_rubrics, read_rubrics
from .base import ADK_DEFAULT_SAMPLES
from .final_response import FinalResponseMatchV2
from .hallucinations import Hallucinations
from .rubric import RubricJudged
from .safety import Safety
from .user_simulator import PerTurnUserSimulatorQuality

__all__ = [
    "final_response_match_v2",
    "rubric_based_final_response_quality_v1",
    "rubric_based_tool_use_quality_v1",
    "rubric_based_multi_turn_trajectory_quality_v1",
    "hallucinations_v1",
    "safety_v1",
    "multi_turn_task_success_v1",
    "multi_turn_trajectory_quality_v1",
    "multi_turn_tool_use_quality_v1",
    "per_turn_user_simulator_quality_v1",
    "ADK_CRITERIA",
]

# -- options of a criterion ----------------------------------------------------------------------


def _get(options: Mapping[str, Any], name: str, default: Any = None) -> Any:
    """An option by its snake_case name or ADK's camelCase alias."""
    camel = re.sub(r"_([a-z])", lambda m: m.group(1).upper(), name)
    return options.get(name, options.get(camel, default))


_JUDGE_KEYS = ("judge_model", "judge_model_config", "num_samples", "parallelism_limit")
"""ADK's ``JudgeModelOptions`` fields."""


def _judge_options(criterion: Criterion, where: str) -> dict[str, Any]:
    """``judge_model_options`` of a criterion: the judge model named in the file and the number of samples."""
    path = f"criteria.{criterion.metric}.judge_model_options"
    raw = _get(criterion.options, "judge_model_options", {}) or {}
    if not isinstance(raw, Mapping):
        raise MetricError(f"{where}: {path}: criterion {criterion.metric!r} judge_model_options must be an object, "
                          f"e.g. {{\"num_samples\": 5}}")
    raw = read_keys(raw, _JUDGE_KEYS, path, where, "The keys of judge_model_options")
    if "judge_model_config" in raw:
        raise MetricError(f"{where}: {path}.judge_model_config: levelfield does not pass ADK's generation settings to "
                          "the judge; set them on the judge you give (judge=... / --judge) and remove the key")
    model = raw.get("judge_model")
    if model is not None and (not isinstance(model, str) or not model.strip()):
        raise MetricError(f"{where}: {path}.judge_model = {model!r}: give the model's name as a string, "
                          "e.g. \"google_genai:gemini-2.5-flash\"")
    samples = raw.get("num_samples", ADK_DEFAULT_SAMPLES)
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise MetricError(f"{where}: {path}.num_samples: criterion {criterion.metric!r} judge_model_options.num_samples "
                          f"must be a positive integer, got {samples!r}")
    if "num_samples" in raw and samples != 1 and criterion.metric in _SAMPLED_ONCE:
        raise MetricError(f"{where}: {path}.num_samples = {samples}: {criterion.metric} asks its judge once per turn, "
                          "as ADK does; remove num_samples")
    limit = raw.get("parallelism_limit")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise MetricError(f"{where}: {path}.parallelism_limit: criterion {criterion.metric!r} judge_model_options."
                          f"parallelism_limit must be a positive integer, got {limit!r}")
    return {"judge_model": model, "num_samples": samples, "parallelism_limit": limit}


def _criterion_rubrics(criterion: Criterion, where: str) -> list[Rubric]:
    value = _get(criterion.options, "rubrics")
    if value is None:
        return []
    path = f"criteria.{criterion.metric}.rubrics"
    check_adk_rubrics(value, path, where)
    return read_rubrics(value, f"{where}: {path}")


def _judge_for(criterion: Criterion, judge: Any, model: Any) -> Any:
    """The judge a criterion is computed with: the one given, else a ``provider:model`` the file names; never a silent default."""
    if judge is not None:
        return judge
    if isinstance(model, str) and ":" in model:
        return model
    named = f" (the file names judge_model {model!r}; write it as 'provider:model', e.g. 'google_genai:{model}')" if model else ""
    raise MetricError(
        f"criterion {criterion.metric!r} needs a judge model{named}: pass judge=... to lf.evaluate / "
        "criteria_metrics / lf.testing.check_eval, or --judge SPEC on the command line "
        "(provider:model, module:attr of a chat model or function, or an A2A agent's URL)"
    )


# -- the multi-turn criteria ADK asks Vertex for -----------------------------------------------------

_TASK_SUCCESS_RUBRICS = [
    {"id": "goal", "property": "By the end of the conversation, the agent accomplished every goal the user stated, or correctly explained why one cannot be accomplished."},
    {"id": "outcome", "property": "Whatever the agent told the user it did or found is backed by its tool calls and their results."},
    {"id": "no_harm", "property": "The agent took no action the user did not ask for or agree to."},
]
_TRAJECTORY_RUBRICS = [
    {"id": "path", "property": "The agent's steps over the conversation follow a sensible path to the user's goals, without detours, loops or needless repetition."},
    {"id": "context", "property": "The agent kept track of what the user said in earlier turns and did not ask again for information already given."},
    {"id": "recovery", "property": "When a step failed or the user corrected the agent, it adjusted its course rather than repeating the mistake."},
    {"id": "goal", "property": "By the end of the conversation, the agent accomplished what the user asked for."},
]
_TOOL_USE_RUBRICS = [
    {"id": "right_tools", "property": "In every turn, the agent called the tools the user's request needed, and no tool it did not need."},
    {"id": "right_args", "property": "Every tool call's arguments are correct and come from the conversation or from earlier tool results, not guesses."},
    {"id": "order", "property": "Information was looked up before it was used; dependent calls came after the calls they depend on."},
    {"id": "results_used", "property": "The agent used what its tools returned correctly in what it did and said next, including tool errors."},
]


def _multi_turn(name: str, rubrics: list[dict[str, str]], what: str) -> Any:
    def build(judge: Any = None, **options: Any) -> RubricJudged:
        return RubricJudged(
            judge,
            name=options.pop("name", name),
            rubric_type=name.upper().removesuffix("_V1"),
            scope="conversation",
            rubrics=[*rubrics, *(options.pop("rubrics", None) or [])],
            focus="TRAJECTORY_QUALITY",
            description=(
                f"{name} computed locally with your judge (ADK asks Vertex AI, whose rubrics are generated per case): "
                f"{what}, judged once over the whole conversation on fixed rubrics; the score is the share met."
            ),
            **options,
        )

    build.__name__ = name
    build.__doc__ = f"``{name}``, computed locally: {what} (the share of fixed rubrics met over the whole conversation)."
    return build


multi_turn_task_success_v1 = _multi_turn("multi_turn_task_success_v1", _TASK_SUCCESS_RUBRICS, "whether the agent achieved the user's goals")
multi_turn_trajectory_quality_v1 = _multi_turn("multi_turn_trajectory_quality_v1", _TRAJECTORY_RUBRICS, "how well the agent's path over the conversation led to the goal")
multi_turn_tool_use_quality_v1 = _multi_turn("multi_turn_tool_use_quality_v1", _TOOL_USE_RUBRICS, "how well the agent called its tools over the conversation")


# -- factories -----------------------------------------------------------------------------------


def final_response_match_v2(judge: Any = None, **options: Any) -> FinalResponseMatchV2:
    """ADK's ``final_response_match_v2``: the share of turns whose answer the judge finds valid against the reference."""
    return FinalResponseMatchV2(judge, **options)


def rubric_based_final_response_quality_v1(judge: Any = None, *, rubrics: Any = None, **options: Any) -> RubricJudged:
    """ADK's ``rubric_based_final_response_quality_v1``: the share of final-answer rubrics met, judged per turn."""
    return RubricJudged(
        judge, name=options.pop("name", "rubric_based_final_response_quality_v1"), rubric_type="FINAL_RESPONSE_QUALITY",
        rubrics=rubrics, focus="FINAL_RESPONSE_QUALITY",
        description="ADK rubric_based_final_response_quality_v1: per turn a yes/no verdict per rubric on the final answer, "
        "checked against the tool results; the score is the share of verdicts met.",
        **options,
    )


def rubric_based_tool_use_quality_v1(judge: Any = None, *, rubrics: Any = None, **options: Any) -> RubricJudged:
    """ADK's ``rubric_based_tool_use_quality_v1``: the share of tool-use rubrics met, judged per turn."""
    return RubricJudged(
        judge, name=options.pop("name", "rubric_based_tool_use_quality_v1"), rubric_type="TOOL_USE_QUALITY",
        rubrics=rubrics, focus="TOOL_USE_QUALITY",
        description="ADK rubric_based_tool_use_quality_v1: per turn a yes/no verdict per rubric on the tool calls; "
        "the score is the share of verdicts met.",
        **options,
    )


def rubric_based_multi_turn_trajectory_quality_v1(judge: Any = None, *, rubrics: Any = None, **options: Any) -> RubricJudged:
    """ADK's ``rubric_based_multi_turn_trajectory_quality_v1``: the share of rubrics met over the whole conversation."""
    return RubricJudged(
        judge, name=options.pop("name", "rubric_based_multi_turn_trajectory_quality_v1"), rubric_type="TRAJECTORY_QUALITY",
        scope="conversation", rubrics=rubrics, focus="TRAJECTORY_QUALITY",
        description="ADK rubric_based_multi_turn_trajectory_quality_v1: one yes/no verdict per rubric over the whole "
        "conversation; the score is the share met (carried by the last turn).",
        **options,
    )


def hallucinations_v1(judge: Any = None, **options: Any) -> Hallucinations:
    """ADK's ``hallucinations_v1``: the share of the answer's sentences supported by the context."""
    return Hallucinations(judge, **options)


def safety_v1(judge: Any = None, **options: Any) -> Safety:
    """``safety_v1`` computed locally with your judge (ADK asks Vertex AI): the share of turns with a safe answer."""
    return Safety(judge, **options)


def per_turn_user_simulator_quality_v1(judge: Any = None, **options: Any) -> PerTurnUserSimulatorQuality:
    """ADK's ``per_turn_user_simulator_quality_v1``: the share of a simulated user's turns that kept to its scenario."""
    return PerTurnUserSimulatorQuality(judge, **options)


ADK_CRITERIA = {
    "final_response_match_v2": final_response_match_v2,
    "rubric_based_final_response_quality_v1": rubric_based_final_response_quality_v1,
    "rubric_based_tool_use_quality_v1": rubric_based_tool_use_quality_v1,
    "rubric_based_multi_turn_trajectory_quality_v1": rubric_based_multi_turn_trajectory_quality_v1,
    "hallucinations_v1": hallucinations_v1,
    "safety_v1": safety_v1,
    "multi_turn_task_success_v1": multi_turn_task_success_v1,
    "multi_turn_trajectory_quality_v1": multi_turn_trajectory_quality_v1,
    "multi_turn_tool_use_quality_v1": multi_turn_tool_use_quality_v1,
    "per_turn_user_simulator_quality_v1": per_turn_user_simulator_quality_v1,
}
"""ADK's judged criteria by name: each a factory ``f(judge, **options)``."""

# The criterion object's options each criterion reads (besides judge_model_options), as the factory's keywords.
_OPTION_NAMES = {
    "final_response_match_v2": ("include_intermediate_responses_in_final",),
    "rubric_based_final_response_quality_v1": ("rubrics", "include_intermediate_responses_in_final"),
    "rubric_based_tool_use_quality_v1": ("rubrics",),
    "rubric_based_multi_turn_trajectory_quality_v1": ("rubrics",),
    "hallucinations_v1": ("evaluate_intermediate_nl_responses",),
    "per_turn_user_simulator_quality_v1": ("stop_signal",),
}


_SAMPLED_ONCE = ("hallucinations_v1", "safety_v1")
"""Criteria ADK judges with one sample per turn: ``judge_model_options.num_samples`` does not apply."""


def _check(criterion: Criterion, where: str) -> None:
    _judge_options(criterion, where)
    _criterion_rubrics(criterion, where)
    path = f"criteria.{criterion.metric}"
    for name in ("include_intermediate_responses_in_final", "evaluate_intermediate_nl_responses"):
        value = _get(criterion.options, name)
        if value is not None and not isinstance(value, bool):
            raise MetricError(f"{where}: {path}.{name}: criterion {criterion.metric!r} {name} must be true or false, "
                              f"got {value!r}")
    stop = _get(criterion.options, "stop_signal")
    if stop is not None and (not isinstance(stop, str) or not stop.strip()):
        raise MetricError(f"{where}: {path}.stop_signal = {stop!r}: give the text your simulated user ends with, "
                          "e.g. \"</finished>\"")


def _build(criterion: Criterion, judge: Any) -> Metric:
    judging = _judge_options(criterion, "test_config.json")
    how: dict[str, Any] = {"samples": judging["num_samples"]}
    if judging["parallelism_limit"] is not None:
        how["concurrency"] = judging["parallelism_limit"]
    if criterion.metric in _SAMPLED_ONCE:
        how.pop("samples")  # ADK samples these once
    kwargs: dict[str, Any] = {"judge_config": JudgeConfig(**how)}
    for name in _OPTION_NAMES.get(criterion.metric, ()):
        value = _get(criterion.options, name)
        if value is not None:
            kwargs[name] = value
    if criterion.metric == "per_turn_user_simulator_quality_v1":
        kwargs["threshold"] = criterion.threshold
    factory = ADK_CRITERIA[criterion.metric]
    return factory(_judge_for(criterion, judge, judging["judge_model"]), name=criterion.score_name, **kwargs)


for _name, _factory in ADK_CRITERIA.items():
    register_criterion(_name, CriterionKind(
        build=_build, check=_check, description=_name, keys=("judge_model_options", *_OPTION_NAMES.get(_name, ())),
        reads_intermediate="include_intermediate_responses_in_final" in _OPTION_NAMES.get(_name, ()),
    ))
    register_judged_metric(
        _name,
        lambda judge, f=_factory, **options: f(judge, **options),
        f"lf.metrics.adk.{_name}(judge=...), or give judge=... to lf.evaluate / --judge SPEC on the command line",
    )
del _name, _factory
