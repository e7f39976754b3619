"""Pass/fail criteria as ADK writes them in ``test_config.json``: read, checked, and made into metrics.

``{"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}}``: a case passes
when each metric's score meets its threshold. ADK's defaults (exactly those two thresholds) apply
when no criteria are given. A criterion may also be an object, as newer ADK writes it:
``{"threshold": 1.0, "match_type": "IN_ORDER", "ignore_args": true}``. Any other levelfield
metric name (``"trajectory_recall": 0.9``) works too.

ADK's judged criteria (``final_response_match_v2``, the rubric-based ones, ``hallucinations_v1``,
``safety_v1``, the ``multi_turn_*`` ones...) are registered by ``levelfield.judge`` with
:func:`register_criterion`; they need a judge model (``criteria_metrics(criteria, judge=...)``),
and their object form keeps ADK's options (``judge_model_options``, ``rubrics``...).

ADK's efficiency criteria (``tool_call_count_v1``, ``inference_call_count_v1``, ``token_usage_v1``,
``invocation_duration_v1``) are informational, as in google-adk 2.x: :func:`with_efficiency` adds them
to every eval (``check_eval`` does), they are averaged per turn and never pass or fail a case, and a
threshold for one is refused with ADK's own reason.

The verdict of the criteria on every case (scores pooled over trials as ADK pools them) is
:mod:`levelfield._core.results.case_verdicts`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import MetricError
from ..score.metrics.base import Metric
from ..score.metrics.efficiency_adk import EFFICIENCY_METRICS

__all__ = [
    "Criterion",
    "CriterionKind",
    "register_criterion",
    "criterion_names",
    "DEFAULT_CRITERIA",
    "CONFIG_NAME",
    "find_config",
    "load_criteria",
    "criteria_metrics",
    "efficiency_criteria",
    "with_efficiency",
    "criteria_by_file",
    "read_keys",
]

CONFIG_NAME = "test_config.json"
DEFAULT_CRITERIA: dict[str, float] = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}
"""ADK's defaults when no ``test_config.json`` is found."""

# ADK metrics levelfield does not compute, and why.
_UNSUPPORTED = {
    "response_evaluation_score": "ADK's Vertex coherence score (deprecated in ADK); use final_response_match_v2 "
    "or rubric_based_final_response_quality_v1 with a judge",
}
_MATCH_TYPES = ("EXACT", "IN_ORDER", "ANY_ORDER")
_INFORMATIONAL = frozenset(EFFICIENCY_METRICS)
"""ADK's efficiency criteria: reported on every eval, never a reason to pass or fail (ADK refuses a threshold for them)."""


@dataclass(frozen=True)
class CriterionKind:
    """A criterion the judge package computes: how its options are checked and how its metric is built."""

    build: Callable[[Criterion, Any], Metric]
    """``build(criterion, judge)``: the metric computing it, with ``judge`` (None when none was given)."""
    check: Callable[[Criterion, str], None] | None = None
    """``check(criterion, where)``: raises a MetricError naming ``where`` when its options are wrong."""
    description: str = ""
    """One line saying what it measures and how levelfield computes it."""
    keys: tuple[str, ...] = ()
    """The keys its criterion object takes besides ``threshold`` (snake_case; ADK's camelCase spelling is accepted
    too): any other key is refused with the nearest known one, as ADK's models refuse them or should."""
    reads_intermediate: bool = False
    """Whether it reads ``include_intermediate_responses_in_final`` (ADK's base criterion field); when not, only
    its default ``false`` is accepted."""


_KINDS: dict[str, CriterionKind] = {}


def register_criterion(name: str, kind: CriterionKind) -> None:
    """Make ``name`` a criterion of ``test_config.json``, computed by ``kind`` (the judge package registers ADK's)."""
    if name in _KINDS:
        raise MetricError(f"a criterion named {name!r} is already registered")
    _KINDS[name] = kind


def criterion_names() -> list[str]:
    """Every name a ``test_config.json`` criterion may have."""
    from ..score.metrics.registry import metric_names

    return sorted({*metric_names(), *_KINDS})


@dataclass(frozen=True)
class Criterion:
    """One metric and the score a case needs on it to pass."""

    metric: str
    """The metric's name: ``tool_trajectory_avg_score``, ``response_match_score`` or any levelfield metric."""
    threshold: float
    """The case passes on this metric when its pooled score is >= threshold."""
    match_type: str = "EXACT"
    """For ``tool_trajectory_avg_score``: ``EXACT`` (ADK's default), ``IN_ORDER`` or ``ANY_ORDER``."""
    ignore_args: bool = False
    """For ``tool_trajectory_avg_score``: compare tool names only."""
    column: str | None = None
    """The name its scores are written under, when not ``metric`` (two files asking for the same
    metric with different options, e.g. EXACT here and IN_ORDER there)."""
    options: Mapping[str, Any] = field(default_factory=dict, hash=False)
    """The criterion object's other fields, as the file gives them (``judge_model_options``,
    ``rubrics``...), for criteria the judge package computes."""
    source: str = field(default="criteria", compare=False, hash=False)
    """Where it was read (the ``test_config.json`` path), for errors."""

    def __post_init__(self) -> None:
        # Made in Python as well as read from a file: held to the same range (0 to 1; 0 or more for a count).
        _threshold(self.metric, self.threshold, f"criteria.{self.metric}", self.source)

    @property
    def score_name(self) -> str:
        """The metric name the result holds this criterion's scores under."""
        return self.column or self.metric

    @property
    def informational(self) -> bool:
        """Reported but never a reason to pass or fail (ADK's efficiency criteria)."""
        return self.metric in _INFORMATIONAL

    @property
    def needs_judge(self) -> bool:
        """Whether computing it takes a judge model."""
        from ..score.metrics.registry import is_judged_metric

        return self.metric in _KINDS or is_judged_metric(self.metric)

    def build_metric(self, judge: Any = None) -> Metric:
        """The metric object that computes this criterion's score; ``judge`` for the criteria that need one."""
        if self.metric == "tool_trajectory_avg_score":
            from ..score.metrics.trajectory import ToolTrajectoryAvgScore

            return ToolTrajectoryAvgScore(self.match_type, ignore_args=self.ignore_args, name=self.score_name)
        try:
            if self.metric in _KINDS:
                metric = _KINDS[self.metric].build(self, judge)
            else:
                from ..score.metrics.registry import resolve_metrics

                metric = resolve_metrics([self.metric], judge=judge)[0]
        except MetricError as exc:
            raise MetricError(f"{self.source}: {exc}") from None
        if self.column:
            metric.name = self.column
        return metric

    def describe(self) -> str:
        """``tool_trajectory_avg_score >= 1.0 (IN_ORDER)``."""
        if self.informational:
            return f"{self.metric} (informational)"
        options = []
        if self.match_type != "EXACT":
            options.append(self.match_type)
        if self.ignore_args:
            options.append("ignore_args")
        return f"{self.metric} >= {self.threshold:g}" + (f" ({', '.join(options)})" if options else "")


def find_config(path: str | Path) -> Path | None:
    """The ``test_config.json`` ADK would use for ``path``: in the folder, or beside the file.

    As ADK's ``AgentEvaluator`` does, only that folder is looked in, not its parents: a file in
    a sub-folder without its own ``test_config.json`` gets ADK's defaults.
    """
    path = Path(path)
    folder = path if path.is_dir() else path.parent
    config = folder / CONFIG_NAME
    return config if config.is_file() else None


def _unknown(name: str, where: str) -> MetricError:
    from ..score.metrics.registry import nearest_name

    if name in _UNSUPPORTED:
        return MetricError(f"{where}: criterion {name!r} is not computed by levelfield: {_UNSUPPORTED[name]}")
    return MetricError(
        f"{where}: unknown criterion {name!r}.{nearest_name(name, criterion_names())} "
        f"Known criteria: {', '.join(criterion_names())}"
    )


def _known(name: str) -> bool:
    from ..score.metrics.registry import metric_names

    return name in _KINDS or name in metric_names()


_TOP_KEYS = ("criteria", "custom_metrics", "user_simulator_config", "live_model_config")
"""The keys of ADK's ``EvalConfig``."""
_NOT_READ = {
    "custom_metrics": "ADK's custom metric functions are not loaded from test_config.json; pass them as "
    "lf.metrics.CustomMetric(...) in metrics= and remove the key",
    "user_simulator_config": "levelfield does not read ADK's user simulator settings; pass simulator=... "
    "(lf.UserSimulator(model) or lf.testing.ScriptedUser(...)) and remove the key",
    "live_model_config": "levelfield does not run ADK's live (streaming audio) mode; remove the key",
}
"""Keys of ADK's ``EvalConfig`` levelfield does not act on: refused rather than ignored, with what to do instead."""
_BASE_KEYS = ("threshold", "include_intermediate_responses_in_final")
"""ADK's ``BaseCriterion`` fields, which every criterion object has."""
_TRAJECTORY_KEYS = ("match_type", "ignore_args")
"""ADK's ``ToolTrajectoryCriterion`` fields beyond the base ones."""
_COUNTS = frozenset({"turns_used", "tool_call_count", "model_call_count", "repeated_tool_calls", "token_count"})
"""levelfield metrics whose score is a count (0 or more), not a share from 0 to 1."""


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def read_keys(value: Mapping[Any, Any], allowed: Sequence[str], path: str, where: str, fix: str) -> dict[str, Any]:
    """``value``'s entries under their snake_case names; a key not in ``allowed`` (nor its camelCase) is an error
    naming the key path, the nearest allowed key and ``fix``."""
    from ..score.metrics.registry import nearest_name

    aliases = {**{_camel(k): k for k in allowed}, **{k: k for k in allowed}}
    out: dict[str, Any] = {}
    for key, item in value.items():
        name = aliases.get(key) if isinstance(key, str) else None
        if name is None:
            hint = nearest_name(str(key), [*allowed, *(_camel(k) for k in allowed)])
            raise MetricError(f"{where}: {path}.{key}: unknown key.{hint} {fix}: {', '.join(allowed)}")
        if name in out:
            raise MetricError(f"{where}: {path}: {name!r} is given twice ({name} and {_camel(name)}); keep one")
        out[name] = item
    return out


def _threshold(name: str, value: Any, path: str, where: str) -> float:
    """A criterion's threshold, checked: a finite number, from 0 to 1 (0 or more for a count metric)."""
    scale = "a count, 0 or more" if name in _COUNTS else "a score from 0 to 1"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise MetricError(
            f"{where}: {path} = {json.dumps(value)}: a threshold must be a number ({name} is {scale}); "
            f"write it without quotes, e.g. 0.8"
        )
    if not math.isfinite(value) or value < 0 or (value > 1 and name not in _COUNTS):
        raise MetricError(
            f"{where}: {path} = {value!r} is out of range: {name} is {scale}, and a case passes when its score "
            f"is at least the threshold; give a number {'of 0 or more' if name in _COUNTS else 'from 0 to 1'}"
        )
    return float(value)


def _flag(value: Any, path: str, where: str) -> bool:
    if not isinstance(value, bool):
        raise MetricError(f"{where}: {path} = {json.dumps(value, default=str)}: give true or false")
    return value


def _match_type(value: Any, path: str, where: str) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(_MATCH_TYPES):
        return _MATCH_TYPES[value]  # ADK's enum values
    normalized = value.strip().upper().replace("-", "_").replace(" ", "_") if isinstance(value, str) else None
    if normalized not in _MATCH_TYPES:
        raise MetricError(f"{where}: {path} = {json.dumps(value)} is not one of {', '.join(_MATCH_TYPES)}; give one of them")
    return normalized


def _criterion(name: Any, value: Any, where: str) -> Criterion:
    if not isinstance(name, str) or not name:
        raise MetricError(f"{where}: criterion names must be metric names, got {name!r}")
    path = f"criteria.{name}"
    if name in _INFORMATIONAL:
        # ADK's own words (google.adk.evaluation._efficiency_evaluators): naming one means giving it a threshold.
        raise MetricError(
            f"{where}: `{name}` does not support a threshold: it reports a value and never passes or fails. "
            "Remove it from `criteria` entirely; it is reported automatically on every eval."
        )
    if not _known(name):
        raise _unknown(name, where)
    if isinstance(value, bool) or not isinstance(value, (int, float, Mapping)):
        raise MetricError(
            f"{where}: {path} = {json.dumps(value, default=str)}: criterion {name!r} must be a threshold number or an "
            f"object with 'threshold', e.g. \"{name}\": 0.8 or \"{name}\": {{\"threshold\": 0.8}}"
        )
    if not isinstance(value, Mapping):
        return _checked(Criterion(metric=name, threshold=_threshold(name, value, path, where), source=where), where)
    kind = _KINDS.get(name)
    extra = _TRAJECTORY_KEYS if name == "tool_trajectory_avg_score" else (kind.keys if kind else ())
    fields = read_keys(value, list(dict.fromkeys([*_BASE_KEYS, *extra])), path, where, f"The keys criterion {name!r} takes")
    if "threshold" not in fields:
        raise MetricError(f"{where}: {path} has no 'threshold'; add one, e.g. \"threshold\": 0.8")
    threshold = _threshold(name, fields.pop("threshold"), f"{path}.threshold", where)
    intermediate = fields.get("include_intermediate_responses_in_final")
    if intermediate is not None and _flag(intermediate, f"{path}.include_intermediate_responses_in_final", where) and not (
        kind and kind.reads_intermediate
    ):
        readers = sorted(n for n, k in _KINDS.items() if k.reads_intermediate)
        raise MetricError(
            f"{where}: {path}.include_intermediate_responses_in_final: {name} reads only the final answer; "
            f"the option applies to {', '.join(readers) or 'no criterion here'}. Remove it"
        )
    options: dict[str, Any] = {}
    if name == "tool_trajectory_avg_score":
        options["match_type"] = _match_type(fields.get("match_type", "EXACT"), f"{path}.match_type", where)
        options["ignore_args"] = _flag(fields.get("ignore_args", False), f"{path}.ignore_args", where)
    elif kind is not None:
        # The judge package reads and checks the values (judge_model_options, rubrics...).
        options["options"] = fields
    return _checked(Criterion(metric=name, threshold=threshold, source=where, **options), where)


def _checked(criterion: Criterion, where: str) -> Criterion:
    """``criterion`` once its kind has checked its options and, when it needs no judge, its metric builds."""
    kind = _KINDS.get(criterion.metric)
    if kind is not None:
        if kind.check is not None:
            kind.check(criterion, where)
        return criterion
    if criterion.needs_judge:
        return criterion  # built with the judge, by criteria_metrics
    try:
        criterion.build_metric()
    except MetricError as exc:
        raise MetricError(f"{where}: {exc}") from None
    return criterion


def load_criteria(spec: str | Path | Mapping[str, Any] | None = None) -> list[Criterion]:
    """Criteria from a ``test_config.json`` path, its parsed content, or a ``{metric: threshold}`` dict.

    ``None`` gives ADK's defaults. A folder means its ``test_config.json`` (defaults when absent).
    Every field is checked as ADK's ``EvalConfig`` reads it, and more strictly where ADK lets a mistake
    through (a threshold outside 0 to 1, a misspelt key): errors name the file, the key path
    (``criteria.tool_trajectory_avg_score.threshold``) and the fix.
    """
    where = "the criteria given"
    if spec is None:
        return [Criterion(name, threshold) for name, threshold in DEFAULT_CRITERIA.items()]
    from_file = isinstance(spec, (str, Path))
    if isinstance(spec, (str, Path)):
        path = Path(spec)
        if path.is_dir():
            found = find_config(path)
            return load_criteria(found) if found is not None else load_criteria(None)
        if not path.is_file():
            raise MetricError(f"{path}: no such criteria file (expected a test_config.json)")
        where = str(path)
        try:
            spec = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise MetricError(f"{path} line {exc.lineno}: not valid JSON ({exc.msg})") from None
        except (UnicodeDecodeError, OSError) as exc:
            raise MetricError(f"{path}: cannot be read as UTF-8 JSON ({exc})") from None
    if not isinstance(spec, Mapping):
        got = type(spec).__name__
        raise MetricError(
            f"{where}: expected {{\"criteria\": {{\"metric_name\": threshold, ...}}}}, got {got}"
            if from_file else f"criteria must be a test_config.json path or a dict, got {got}"
        )
    if from_file and "criteria" not in spec and any(isinstance(k, str) and _known(k) for k in spec):
        raise MetricError(f"{where}: expected {{\"criteria\": {{\"metric_name\": threshold, ...}}}}; "
                          "put the criteria inside a \"criteria\" object")
    if from_file or any(k in spec for k in (*_TOP_KEYS, *map(_camel, _TOP_KEYS))):
        top = read_keys(spec, _TOP_KEYS, "(top level)", where, "The keys of a test_config.json")
        for key in top:
            if key in _NOT_READ:
                raise MetricError(f"{where}: {key}: {_NOT_READ[key]}")
        if not isinstance(top.get("criteria"), Mapping):
            raise MetricError(f"{where}: expected {{\"criteria\": {{\"metric_name\": threshold, ...}}}}"
                              + (f"; criteria is {type(top['criteria']).__name__}" if "criteria" in top else ""))
        criteria = top["criteria"]
    else:
        criteria = spec
    if not criteria:
        raise MetricError(f"{where}: no criteria given; name at least one metric and its threshold")
    return [_criterion(name, value, where) for name, value in criteria.items()]


def efficiency_criteria() -> list[Criterion]:
    """ADK's informational efficiency criteria, as every eval reports them (they take no threshold)."""
    # The threshold is never read: informational criteria pass whatever their score.
    return [Criterion(name, 0.0, source="reported on every eval") for name in EFFICIENCY_METRICS]


def with_efficiency(criteria: Sequence[Criterion]) -> list[Criterion]:
    """``criteria`` then ADK's efficiency criteria not already among them (as ADK adds them to every eval)."""
    named = {c.metric for c in criteria}
    return [*criteria, *(c for c in efficiency_criteria() if c.metric not in named)]


def criteria_metrics(criteria: Sequence[Criterion] | Mapping[str, Sequence[Criterion]], *, judge: Any = None) -> list[Metric]:
    """The metric objects that compute ``criteria``'s scores, one per distinct score name.

    ``criteria`` is one list for every case, or ``{case_id: [Criterion, ...]}`` (see
    :func:`criteria_by_file`). ``judge`` (a LangChain chat model, a callable, an agent, a
    ``"provider:model"`` string...) judges the criteria that need one; without it they are an error
    saying how to give one.
    """
    every = _every(criteria)
    return [c.build_metric(judge) for c in {c.score_name: c for c in every}.values()]


def _every(criteria: Sequence[Criterion] | Mapping[str, Sequence[Criterion]]) -> list[Criterion]:
    if isinstance(criteria, Mapping):
        return [c for group in criteria.values() for c in group]
    return list(criteria)


def criteria_by_file(files: Mapping[str, str | Path | None], default: str | Path | None = None) -> dict[str, list[Criterion]]:
    """Each case's criteria from the ``test_config.json`` beside its file, as ADK resolves them.

    ``files`` maps case ids to the file each case came from (None: use ``default``, a file or
    folder whose ``test_config.json`` applies, else ADK's defaults). Where two files ask for the
    same metric with different options, the second one's scores get their own column,
    ``tool_trajectory_avg_score[IN_ORDER]``.
    """
    configs: dict[str, Path | None] = {}
    for case_id, file in files.items():
        where = file if file is not None else default
        configs[case_id] = find_config(where) if where is not None and Path(where).exists() else None
    loaded = {config: load_criteria(config) for config in dict.fromkeys(configs.values())}
    # One score column per metric and options; the first spelling met keeps the plain name.
    names: dict[tuple[str, str, bool], str] = {}
    for c in (c for group in loaded.values() for c in group):
        key = (c.metric, c.match_type, c.ignore_args)
        if key not in names:
            plain = c.metric not in names.values()
            names[key] = c.metric if plain else f"{c.metric}[{c.match_type}{',ignore_args' if c.ignore_args else ''}]"

    def named(c: Criterion) -> Criterion:
        name = names[(c.metric, c.match_type, c.ignore_args)]
        return c if name == c.metric else replace(c, column=name)

    renamed = {config: [named(c) for c in group] for config, group in loaded.items()}
    return {case_id: renamed[config] for case_id, config in configs.items()}
