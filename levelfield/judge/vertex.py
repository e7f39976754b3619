"""Vertex AI's rubric metrics by their Vertex names, computed locally with any judge.

    import levelfield as lf
    lf.evaluate(data, agent, metrics=["GENERAL_QUALITY", "MULTI_TURN_TASK_SUCCESS", "hallucination_v1"], judge=model)
    lf.evaluate(data, agent, metrics=[lf.metrics.RubricMetric.GENERAL_QUALITY(version="v1")], judge=model)

Vertex's own ``types.RubricMetric.GENERAL_QUALITY`` objects (and ``types.Metric(name="general_quality_v1")``)
are accepted in ``metrics=[...]`` too, without importing vertexai. A name resolves as Vertex resolves
it (google-cloud-aiplatform 2.x), and that is the metric's name and column (``<name>/score``): no
version gives the latest (``GENERAL_QUALITY`` -> ``general_quality_v2``, ``HALLUCINATION`` ->
``hallucination_v2``; the ``MULTI_TURN_*`` ones are pinned to ``_v1`` as Vertex pins them). The
computation does not depend on the version: Vertex's service is not called; your judge is.

- ``GENERAL_QUALITY``: rubrics are generated once per case from what the user asked (the judge is
  asked to write them; the answer is cached), kept in the case's ``rubric_groups`` under the
  metric's name (Vertex's column, so rubrics made with Vertex's ``generate_rubrics`` are used as
  they are, and the run record's case lines keep the generated ones: a resumed or re-scored run
  judges on the same rubrics and never generates again); then a yes/no verdict per rubric on the
  agent's final answer, the score being the share met. ``rubric_group_name=`` picks another group.
- ``MULTI_TURN_TASK_SUCCESS``, ``MULTI_TURN_TOOL_USE_QUALITY``, ``MULTI_TURN_TRAJECTORY_QUALITY``:
  the same computation as ADK's ``multi_turn_*_v1`` criteria (see :mod:`levelfield.judge.adk`).
- ``HALLUCINATION``: the share of the answer's sentences the context supports, as ADK's ``hallucinations_v1``.

Vertex summarizes a metric by its mean, standard deviation (sample) and pass rate (the share of
rows scoring 1.0): levelfield's ``<name>/mean`` and ``<name>/std`` are the first two.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

from .._core.errors import MetricError
from .._core.score.metrics.base import NAN, Metric, Score, ScoringContext, TurnContext
from .._core.score.metrics.registry import register_judged_metric, register_metric_converter
from . import adk
from .answers import json_objects
from .client import JudgeReply
from .config import judge_config
from .metrics import cost_columns, judge_failure
from .rubrics import RUBRIC_ANSWER_FORMAT, RUBRIC_EXPECTED, Rubric, parse_verdicts, read_rubrics, render_rubrics

__all__ = [
    "GeneralQuality",
    "RubricMetric",
    "VertexMetric",
    "VERTEX_METRICS",
    "vertex_metric_name",
    "build_vertex_metric",
]

_LATEST = {"general_quality": "v2", "hallucination": "v2"}
"""Vertex's version of a name given without one (``METRIC_LATEST_SPEC_NAME``; RubricMetric pins the multi-turn ones to v1)."""
_VERSIONS = {
    "general_quality": ("v1", "v2"),
    "hallucination": ("v1", "v2"),
    "multi_turn_task_success": ("v1",),
    "multi_turn_tool_use_quality": ("v1",),
    "multi_turn_trajectory_quality": ("v1",),
}
"""The Vertex rubric metrics levelfield computes, and the versions Vertex has of each."""
VERTEX_METRICS = tuple(name.upper() for name in _VERSIONS)
"""Their names as Vertex's ``RubricMetric`` spells them."""


def vertex_metric_name(name: str, version: str | None = None) -> str:
    """The spec name Vertex gives ``name`` (``"GENERAL_QUALITY"`` -> ``"general_quality_v2"``); an unknown name suggests the nearest."""
    base = str(name).strip().lower()
    for known, versions in _VERSIONS.items():
        if version is None and base in {f"{known}_{v}" for v in versions}:
            return base
    if base in _VERSIONS:
        chosen = (version or _LATEST.get(base, "v1")).lower()
        if chosen in _VERSIONS[base]:
            return f"{base}_{chosen}"
        raise MetricError(
            f"Vertex metric {name!r} has no version {version!r}; levelfield computes {', '.join(_VERSIONS[base])}"
        )
    spellings = [*VERTEX_METRICS, *(f"{k}_{v}" for k, vs in _VERSIONS.items() for v in vs)]
    close = difflib.get_close_matches(base.upper(), VERTEX_METRICS, n=1, cutoff=0.6) or difflib.get_close_matches(
        base, spellings, n=1, cutoff=0.6
    )
    hint = f" Did you mean {close[0]!r}?" if close else ""
    raise MetricError(
        f"unknown Vertex rubric metric {name!r}.{hint} levelfield computes these locally with your judge: "
        f"{', '.join(VERTEX_METRICS)}"
    )


# -- GENERAL_QUALITY -------------------------------------------------------------------------------

_GENERATE_PROMPT = """# Task
Write the rubric for judging an AI agent's answer to the user's request below: the properties a
high-quality answer to this request must have. Each property is one statement about the answer
that can be checked with a yes or no: what it must contain, do or avoid, the format, length or
language the user asked for, and the facts it must get right. Make them specific to this request,
not generic advice; write between 3 and 8; write them in the language of the request.

{conversation}# The user's request
{prompt}

# Your answer
Reply with one JSON object and nothing else:
{{"rubrics": [{{"id": "1", "property": "<a property of a good answer>", "type": "<a short category, e.g. COMPLETENESS>"}}, ...]}}"""

_TEXT_ONLY = {"type": "object", "properties": {}}
"""The schema handed to the judge client for a plain text answer."""

GENERATION_EXPECTED = 'a JSON object like {"rubrics": [{"id": "1", "property": "The answer names the city."}]}'
"""The rubric-writing answer ``GENERAL_QUALITY`` reads first, in one line with a literal example."""

_JUDGE_INSTRUCTION = (
    "You judge the overall quality of the answer an AI agent gave a user, one property at a time.\n"
    "Read the user's request (and the conversation before it, when shown), the agent's tool calls and what they "
    "returned, and its final answer. A factual claim counts as correct only if the request or the tool results "
    "support it or it is common knowledge.\n"
    '"yes": the answer fulfils the property, or the property does not apply to it.\n'
    '"no": the property applies and the answer does not fulfil it.'
)


def _asked(ctx: ScoringContext) -> tuple[str, str]:
    """(the conversation before the request, the request): what the user asked, never what an agent answered,
    so that every agent of a case is judged on the same rubrics."""
    before = [f"{m.role}: {m.content}" for m in ctx.history]
    prompts = [t.prompt for t in ctx.turns] if ctx.turns else [ctx.prompt or ""]
    before += [f"user: {p}" for p in prompts[:-1]]
    conversation = "# The conversation before it\n" + "\n".join(before) + "\n\n" if before else ""
    return conversation, prompts[-1]


def read_generated(text: str | None, where: str) -> list[Rubric] | None:
    """The rubrics a generation answer lists (possibly none), or None when it lists nothing readable."""
    for obj in reversed(json_objects(text or "")):
        items = obj.get("rubrics")
        if isinstance(items, list):
            try:
                return read_rubrics(items, where)
            except MetricError:
                return None
    return None


def as_vertex_rubric(rubric: Rubric) -> dict[str, Any]:
    """A rubric in Vertex's ``Rubric`` shape (``rubric_id``, ``content.property.description``, ``type``)."""
    out: dict[str, Any] = {"rubric_id": rubric.id, "content": {"property": {"description": rubric.text}}}
    if rubric.type:
        out["type"] = rubric.type
    return out


class GeneralQuality(adk.RubricJudged):
    """Vertex's ``GENERAL_QUALITY``, computed locally: rubrics generated once per case, then a verdict on each.

    The case's rubric group ``rubric_group_name`` (default: the metric's name) in its
    ``rubric_groups`` is used when present; otherwise the judge writes the rubrics from what the
    user asked, they are stored there (so the run record keeps them), and every agent and trial
    of the case is judged on them. A generation answer listing no rubric is a failed score naming
    the case, with the answer kept; one that cannot be read is NaN with the answer kept.
    """

    requires = ("response",)
    default_samples = 1  # Vertex's predefined metrics are sampled once

    def __init__(
        self, judge: Any = None, *, name: str = "general_quality_v1", rubric_group_name: str | None = None, **options: Any
    ) -> None:
        super().__init__(
            judge,
            name=name,
            rubric_type=None,
            scope="turn",
            focus="FINAL_RESPONSE_QUALITY",
            instruction=_JUDGE_INSTRUCTION,
            description=(
                "Vertex GENERAL_QUALITY computed locally with your judge (Vertex AI is not called): rubrics "
                "generated once per case from the user's request (kept in the case's rubric_groups), then a yes/no "
                "verdict per rubric on the final answer; the score is the share met."
            ),
            **options,
        )
        self.rubric_group_name = rubric_group_name or name
        self.expected_answer = f"first (unless the case gives rubrics) {GENERATION_EXPECTED}; then {RUBRIC_EXPECTED}"
        self._locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Lock]] = weakref.WeakKeyDictionary()

    def given_rubrics(self, metadata: Mapping[str, Any], case_id: str) -> list[Rubric] | None:
        """The case's rubrics for this metric from its ``rubric_groups`` (None when it has none)."""
        groups = metadata.get("rubric_groups")
        if isinstance(groups, str):
            groups = read_groups_text(groups, case_id)
        if not isinstance(groups, Mapping) or groups.get(self.rubric_group_name) is None:
            return None
        return read_rubrics(groups[self.rubric_group_name], f"case {case_id!r}: rubric_groups[{self.rubric_group_name!r}]")

    def check_case(self, case: Any) -> None:
        """Rubrics the case gives must be readable (they are generated at run time when it gives none)."""
        self.given_rubrics(case.metadata, case.case_id)

    def generation_prompt(self, ctx: ScoringContext) -> str:
        """The prompt asking the judge to write the case's rubrics."""
        conversation, prompt = _asked(ctx)
        return _GENERATE_PROMPT.format(conversation=conversation, prompt=prompt)

    async def rubrics_of(self, ctx: ScoringContext) -> tuple[list[Rubric] | None, JudgeReply | None, Score | None]:
        """(rubrics, the generation reply when this row paid for it, a failed Score when there are none to judge)."""
        where = f"case {ctx.case_id!r}"
        locks = self._locks.setdefault(asyncio.get_running_loop(), {})
        async with locks.setdefault(ctx.case_id, asyncio.Lock()):  # one generation per case, however many rows wait
            given = self.given_rubrics(ctx.metadata, ctx.case_id)
            if given is not None:
                if not given:
                    return None, None, Score(NAN, failed=True, error=f"{where}: rubric_groups[{self.rubric_group_name!r}] is empty; nothing to judge")
                return given, None, None
            if self.judge is None:
                self.use_default_judge(None)  # raises: says how to give a judge
            assert self.judge is not None
            reply = await self.judge.ask(
                self.generation_prompt(ctx),
                _TEXT_ONLY,
                cache=self.cache,
                settings={"generate_rubrics": True},
                usable=lambda r: bool(read_generated(r.text, where)),
            )
            extra, usage = cost_columns([reply])
            if reply.error is not None:
                return None, reply, judge_failure(extra, usage, answers=[], errors=[reply.error], expected=GENERATION_EXPECTED)
            rubrics = read_generated(reply.text, where)
            raw = reply.text or "(empty answer)"
            if rubrics is None:
                return None, reply, judge_failure({**extra, "unparsed": [raw]}, usage, answers=[reply.text], errors=[],
                                                  expected=GENERATION_EXPECTED)
            if not rubrics:
                error = (f"{where}: the judge generated an empty rubric list for {self.name!r}; nothing to judge "
                         "(its answer is in /unparsed; run again to ask anew, or give the case rubric_groups)")
                return None, reply, Score(NAN, explanation=raw, extra={**extra, "unparsed": [raw]}, failed=True, usage=usage, error=error)
            groups = ctx.metadata.setdefault("rubric_groups", {})
            groups[self.rubric_group_name] = [as_vertex_rubric(r) for r in rubrics]
            return rubrics, reply, None

    def render(self, turns: Sequence[TurnContext], rubrics: Sequence[Rubric]) -> str:
        """The prompt judging the last answer of ``turns`` (the turns before it shown as the conversation)."""
        *before, last = turns
        lines = ["# Task", self.instruction, ""]
        if before:
            lines += ["# The conversation before it", adk.dialogue_text(before), ""]
        lines += [
            "# The user's request", last.prompt, "",
            "# The agent's tool calls and their results", adk.calls_json(last.predicted_trajectory), "",
            "# The agent's final answer", last.response or "", "",
            "# Properties", render_rubrics(rubrics), "", RUBRIC_ANSWER_FORMAT,
        ]
        return "\n".join(lines)

    async def ascore(self, ctx: ScoringContext) -> Score:
        rubrics, generation, failed = await self.rubrics_of(ctx)
        if failed is not None:
            return failed
        assert rubrics is not None
        turns = ctx.exchanges()
        replies = await self._samples(self.render(turns, rubrics), lambda r: parse_verdicts(r.text, rubrics, r.parsed).complete)
        score = self.combine([(len(turns), rubrics, replies)], len(turns))
        if generation is not None:  # the row that asked for the rubrics pays for them
            extra, score.usage = cost_columns([generation, *replies])
            score.extra.update(extra)
        return score


def read_groups_text(text: str, case_id: str) -> Any:
    """A ``rubric_groups`` cell given as JSON text (a CSV column)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise MetricError(f"case {case_id!r}: rubric_groups is not valid JSON ({exc.msg})") from None


# -- names and objects -----------------------------------------------------------------------------


def build_vertex_metric(name: str, judge: Any = None, *, version: str | None = None, **options: Any) -> Metric:
    """The metric Vertex calls ``name`` (any spelling: ``GENERAL_QUALITY``, ``general_quality_v1``...), judged by ``judge``."""
    spec = vertex_metric_name(name, version)
    base = spec.rsplit("_", 1)[0]
    options.setdefault("name", spec)
    if base == "general_quality":
        return GeneralQuality(judge, **options)
    vertex = f"Vertex {base.upper()} computed locally with your judge (Vertex AI is not called): "
    if base == "hallucination":
        metric: Any = adk.hallucinations_v1(judge, **options)
        metric.description = vertex + "the share of the answer's sentences the context (request, tool calls and outputs) supports."
        return metric
    # Vertex samples its predefined metrics once (ADK's default is 5), unless judge_config says otherwise.
    config = judge_config(options.get("judge_config"))
    options["judge_config"] = config if config.samples is not None else config.replace(samples=1)
    metric = adk.ADK_CRITERIA[f"{base}_v1"](judge, **options)
    metric.description = vertex + metric.description.split(": ", 1)[-1]
    return metric


class VertexMetric:
    """A Vertex rubric metric named as in ``vertexai.types.RubricMetric``, built once a judge is known.

    Put it in ``metrics=[...]`` with ``judge=...``, or call it: ``RubricMetric.GENERAL_QUALITY(version="v1",
    judge=model, rubric_group_name="my_rubrics")`` gives the metric itself when a judge is among the keywords.
    """

    def __init__(self, name: str, version: str | None = None, **options: Any) -> None:
        self.spec_name = vertex_metric_name(name, version)
        self.vertex_name = name.upper()
        self.version = version
        self.options = options

    def __call__(self, version: str | None = None, **options: Any) -> Any:
        judge = options.pop("judge", None)
        spec = VertexMetric(self.vertex_name, version or self.version, **{**self.options, **options})
        return spec if judge is None else spec.build(judge)

    def build(self, judge: Any) -> Metric:
        """The metric, judged by ``judge``."""
        return build_vertex_metric(self.spec_name, judge, **self.options)

    def __repr__(self) -> str:
        return f"RubricMetric.{self.vertex_name}" + (f"(version={self.version!r})" if self.version else "")


class _RubricMetrics:
    """Vertex's ``types.RubricMetric`` names that levelfield computes locally: ``RubricMetric.GENERAL_QUALITY``..."""

    def __getattr__(self, name: str) -> VertexMetric:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return VertexMetric(name)
        except MetricError as exc:
            raise AttributeError(str(exc)) from None

    def __dir__(self) -> list[str]:
        return list(VERTEX_METRICS)


RubricMetric = _RubricMetrics()
"""``lf.metrics.RubricMetric.GENERAL_QUALITY`` and the other Vertex rubric metrics levelfield computes."""


def _from_vertex_object(spec: Any, judge: Any) -> Metric | None:
    """A metric for a :class:`VertexMetric`, or for vertexai's own RubricMetric / ``types.Metric`` object; None for anything else."""
    if isinstance(spec, VertexMetric):
        if judge is None:
            raise MetricError(f"{spec!r} needs a judge model: give judge=... to lf.evaluate, or call {spec!r}(judge=...)")
        return spec.build(judge)
    if not type(spec).__module__.startswith("vertexai") or not isinstance(getattr(spec, "name", None), str):
        return None
    version = getattr(spec, "version", None)
    kwargs = dict(getattr(spec, "metric_kwargs", None) or {})
    if getattr(spec, "rubric_group_name", None):
        kwargs["rubric_group_name"] = spec.rubric_group_name
    spec_name = vertex_metric_name(spec.name, version)
    if judge is None:
        raise MetricError(f"Vertex metric {spec_name!r} is computed locally with a judge model: give judge=... to lf.evaluate")
    options = {k: v for k, v in kwargs.items() if k == "rubric_group_name"}
    return build_vertex_metric(spec_name, judge, **options)


register_metric_converter(_from_vertex_object)

# Every spelling Vertex users write, by name in metrics=[...] with judge=... (ADK registers multi_turn_*_v1).
for _base, _versions in _VERSIONS.items():
    for _name in (_base, _base.upper(), *(f"{_base}_{v}" for v in _versions)):
        if _name in adk.ADK_CRITERIA:
            continue
        register_judged_metric(
            _name,
            lambda judge, n=_name, **options: build_vertex_metric(n, judge, **options),
            f"lf.metrics.RubricMetric.{_base.upper()}(judge=...), or give judge=... to lf.evaluate / --judge SPEC",
        )
del _base, _versions, _name
