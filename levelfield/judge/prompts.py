"""Judge prompts: the pointwise and pairwise prompt templates, users' own prompt strings, how a row's values are rendered into them, and the answer format asked for.

:class:`PointwiseMetricPromptTemplate` builds a prompt for rating one agent's work from criteria,
a rating rubric and the row fields to show; :class:`PairwiseMetricPromptTemplate` does the same
for judging two agents side by side (case fields once, agent fields once per agent). A plain
string with ``{placeholders}`` is accepted too (:func:`pointwise_template`,
:func:`pairwise_template`). Row values are rendered as the judge reads them: text as is,
trajectories and structures as indented JSON, history as ``role: content`` lines.
:func:`answer_format` and :func:`answer_schema` say how the judge must answer, in text or as
structured output.
"""

from __future__ import annotations

import json
import string
from collections.abc import Mapping, Sequence
from typing import Any

from .._core.data.types import ToolCall
from .._core.errors import MetricError
from .._core.score.metrics.base import ScoringContext
from .answers import preference_label

__all__ = [
    "PointwiseMetricPromptTemplate",
    "PairwiseMetricPromptTemplate",
    "FreeformPointwiseTemplate",
    "FreeformPairwiseTemplate",
    "pointwise_template",
    "pairwise_template",
    "row_value",
    "required_fields",
    "answer_format",
    "expected_json",
    "answer_schema",
]

# Row fields a template may use, besides the dataset's own extra columns (metadata).
_ROW_FIELDS = ("prompt", "response", "reference", "predicted_trajectory", "reference_trajectory", "history", "case_id")
# Fields that are None when a row lacks them: a metric using one gives NaN on such rows.
_OPTIONAL_FIELDS = ("prompt", "response", "reference", "reference_trajectory")


def _render_value(value: Any) -> str:
    """A row value as the judge reads it: text as is, trajectories and structures as indented JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(v, ToolCall) for v in value):
        return json.dumps([c.to_vertex() for c in value], indent=2, ensure_ascii=False, default=str)
    if isinstance(value, list) and value and all(hasattr(v, "role") and hasattr(v, "content") for v in value):
        return "\n".join(f"{m.role}: {m.content}" for m in value)
    if isinstance(value, (list, dict)):
        plain = [v.model_dump() if hasattr(v, "model_dump") else v for v in value] if isinstance(value, list) else value
        return json.dumps(plain, indent=2, ensure_ascii=False, default=str)
    return str(value)


def required_fields(names: Sequence[str]) -> tuple[str, ...]:
    """Of the row fields a template shows, those a row may lack (None): rows lacking one get NaN, not a judge call."""
    return tuple(n for n in names if n in _OPTIONAL_FIELDS)


def row_value(ctx: ScoringContext, name: str, metric: str) -> Any:
    """The value of template field ``name`` for one row: a row field or a dataset column; an error naming the case if it has neither."""
    if name in _ROW_FIELDS:
        return getattr(ctx, name)
    if name in ctx.metadata:
        return ctx.metadata[name]
    available = sorted({*_ROW_FIELDS, *ctx.metadata})
    raise MetricError(
        f"metric {metric!r}: the prompt template uses {{{name}}}, but case {ctx.case_id!r} has no field {name!r}; "
        f"fields available: {', '.join(available)}"
    )


def _section(title: str, items: Mapping[str, str] | str | None) -> list[str]:
    if not items:
        return []
    body = items if isinstance(items, str) else "\n".join(f"{k}: {v}" for k, v in items.items())
    return [title, body, ""]


def _check_text_dict(value: Any, what: str, owner: str) -> dict[str, str]:
    if not isinstance(value, Mapping) or not value:
        raise MetricError(f"{owner}: {what} must be a non-empty dict of name -> description, got {value!r}")
    return {str(k): str(v) for k, v in value.items()}


def _check_variables(names: Sequence[str] | None, owner: str) -> list[str]:
    out: list[str] = []
    for name in names or []:
        if not isinstance(name, str) or not name.isidentifier():
            raise MetricError(f"{owner}: input variable {name!r} is not a valid name (letters, digits, underscores)")
        if name not in out:
            out.append(name)
    return out


_DEFAULT_POINTWISE_INSTRUCTION = (
    "You are grading the work of an AI agent. You are shown what the user asked, what the agent did, "
    "and the agent's final response. Judge it only by the criteria below, think it through, and give "
    "exactly one rating from the rating rubric."
)
_DEFAULT_POINTWISE_STEPS = {
    "Step 1": "Check the agent's work against each criterion in turn, noting what meets it and what does not.",
    "Step 2": "Pick the single rubric rating that fits best and explain it in a few sentences.",
}


class PointwiseMetricPromptTemplate:
    """A judge prompt built from criteria and a rating rubric, as in Vertex AI; users read, copy and edit it.

    ``input_variables`` are the row fields shown to the judge: ``prompt``, ``reference``,
    ``predicted_trajectory``, ``reference_trajectory``, ``history``, ``case_id`` or any extra
    dataset column. ``response`` is always shown. Trajectories are rendered as indented JSON.
    """

    def __init__(
        self,
        *,
        criteria: Mapping[str, str],
        rating_rubric: Mapping[str, str],
        input_variables: Sequence[str] | None = None,
        instruction: str | None = None,
        evaluation_steps: Mapping[str, str] | None = None,
        metric_definition: str | None = None,
        few_shot_examples: Sequence[str] | None = None,
    ) -> None:
        owner = "PointwiseMetricPromptTemplate"
        self.criteria = _check_text_dict(criteria, "criteria", owner)
        self.rating_rubric = _check_text_dict(rating_rubric, "rating_rubric", owner)
        variables = _check_variables(input_variables, owner)
        # The response is what is judged, so it is always shown (and shown last).
        self.input_variables = [v for v in variables if v != "response"] + ["response"]
        self.instruction = instruction or _DEFAULT_POINTWISE_INSTRUCTION
        self.evaluation_steps = dict(evaluation_steps) if evaluation_steps else dict(_DEFAULT_POINTWISE_STEPS)
        self.metric_definition = metric_definition
        self.few_shot_examples = list(few_shot_examples or [])

    def _compose(self, values: Mapping[str, str]) -> str:
        lines = ["# Instruction", self.instruction, "", "# Evaluation"]
        lines += _section("## Metric definition", self.metric_definition)
        lines += _section("## Criteria", self.criteria)
        lines += _section("## Rating rubric", self.rating_rubric)
        lines += _section("## Evaluation steps", self.evaluation_steps)
        lines += _section("## Examples", "\n\n".join(self.few_shot_examples))
        lines += ["# What the agent was given and what it did"]
        for name in self.input_variables:
            if name == "response":
                continue
            lines += [f"## {name}", values[name], ""]
        lines += ["## response", values["response"]]
        return "\n".join(lines)

    @property
    def template(self) -> str:
        """The prompt with ``{placeholders}`` where the row's values go."""
        return self._compose({name: "{" + name + "}" for name in self.input_variables})

    def render(self, values: Mapping[str, Any]) -> str:
        """The prompt for one row; ``values`` maps each input variable to its value."""
        missing = [n for n in self.input_variables if n not in values]
        if missing:
            raise MetricError(f"the prompt template needs {', '.join(missing)}, which the row does not have")
        return self._compose({n: _render_value(values[n]) for n in self.input_variables})

    def __str__(self) -> str:
        return self.template

    def __repr__(self) -> str:
        return f"PointwiseMetricPromptTemplate(criteria={list(self.criteria)}, rating_rubric={list(self.rating_rubric)}, input_variables={self.input_variables})"


class FreeformPointwiseTemplate:
    """A user's own prompt string with ``{name}`` placeholders (``{{``/``}}`` for literal braces)."""

    def __init__(self, text: str, owner: str) -> None:
        names: list[str] = []
        try:
            fields = [f for _, f, _, _ in string.Formatter().parse(text) if f is not None]
        except ValueError as exc:
            raise MetricError(f"{owner}: the prompt template is not a valid format string: {exc} (write literal braces as {{{{ and }}}})") from None
        for name in fields:
            if not name.isidentifier():
                raise MetricError(
                    f"{owner}: placeholder {{{name}}} in the prompt template is not a plain field name; "
                    "use names like {prompt}, {response}, {predicted_trajectory}, and {{ }} for literal braces"
                )
            if name not in names:
                names.append(name)
        if not names:
            raise MetricError(f"{owner}: the prompt template has no placeholders; use e.g. {{prompt}} and {{response}}")
        self.text = text
        self.input_variables = names
        self.rating_rubric: dict[str, str] | None = None

    @property
    def template(self) -> str:
        """The user's prompt string, as given."""
        return self.text

    def render(self, values: Mapping[str, Any]) -> str:
        """The prompt for one row; ``values`` maps each placeholder to its value."""
        missing = [n for n in self.input_variables if n not in values]
        if missing:
            raise MetricError(f"the prompt template needs {', '.join(missing)}, which the row does not have")
        return self.text.format_map({n: _render_value(values[n]) for n in self.input_variables})

    def __str__(self) -> str:
        return self.text


# ---------------------------------------------------------------------------------------------
# Pairwise
# ---------------------------------------------------------------------------------------------

_AGENT_FIELDS = ("response", "predicted_trajectory")

_DEFAULT_PAIRWISE_INSTRUCTION = (
    "You are comparing the work of two AI agents, A and B, on the same request. You are shown the "
    "request, then what each agent did and answered. Judge only by the criteria below; the order in "
    "which the agents are shown and the length of their answers say nothing about their quality."
)
_DEFAULT_PAIRWISE_STEPS = {
    "Step 1": "Check each agent's work against each criterion.",
    "Step 2": "Decide which agent did better overall, or whether they are equally good, and explain why.",
}
_DEFAULT_PAIRWISE_RUBRIC = {
    "A": "Agent A did better than agent B.",
    "B": "Agent B did better than agent A.",
    "tie": "Neither did better: both are equally good or equally bad.",
}
_DEFAULT_PAIRWISE_CRITERIA = {
    "Task completion": "The agent did what the user asked, completely and correctly, calling the right tools with the right arguments.",
    "Faithfulness": "The final response states only what the agent's tool results support and tells the user what was done.",
    "Economy": "The agent made no needless, repeated or harmful tool calls.",
}


class PairwiseMetricPromptTemplate:
    """A prompt for judging two agents side by side: criteria, an A/B/tie rubric and the row fields to show.

    Case fields (``prompt``, ``reference``, ``reference_trajectory``, ``history``, extra columns)
    are shown once; agent fields (``response``, ``predicted_trajectory``) once per agent.
    ``response`` is always shown.
    """

    def __init__(
        self,
        *,
        criteria: Mapping[str, str] | None = None,
        rating_rubric: Mapping[str, str] | None = None,
        input_variables: Sequence[str] | None = None,
        instruction: str | None = None,
        evaluation_steps: Mapping[str, str] | None = None,
        metric_definition: str | None = None,
    ) -> None:
        owner = "PairwiseMetricPromptTemplate"
        self.criteria = _check_text_dict(criteria or _DEFAULT_PAIRWISE_CRITERIA, "criteria", owner)
        self.rating_rubric = _check_text_dict(rating_rubric or _DEFAULT_PAIRWISE_RUBRIC, "rating_rubric", owner)
        labels = {preference_label(k) for k in self.rating_rubric}
        if not {"A", "B"} <= labels or None in labels:
            raise MetricError(
                f"{owner}: rating_rubric keys must be 'A', 'B' and optionally 'tie' (or 'SAME'), got {list(self.rating_rubric)}"
            )
        variables = _check_variables(
            input_variables if input_variables is not None else ["prompt", "predicted_trajectory"], owner
        )
        self.input_variables = [v for v in variables if v != "response"] + ["response"]
        self.instruction = instruction or _DEFAULT_PAIRWISE_INSTRUCTION
        self.evaluation_steps = dict(evaluation_steps) if evaluation_steps else dict(_DEFAULT_PAIRWISE_STEPS)
        self.metric_definition = metric_definition

    @property
    def case_variables(self) -> list[str]:
        """The fields shown once, for the case."""
        return [v for v in self.input_variables if v not in _AGENT_FIELDS]

    @property
    def agent_variables(self) -> list[str]:
        """The fields shown once per agent."""
        return [v for v in self.input_variables if v in _AGENT_FIELDS]

    def _compose(self, case: Mapping[str, str], first: Mapping[str, str], second: Mapping[str, str]) -> str:
        lines = ["# Instruction", self.instruction, "", "# Evaluation"]
        lines += _section("## Metric definition", self.metric_definition)
        lines += _section("## Criteria", self.criteria)
        lines += _section("## Rating rubric", self.rating_rubric)
        lines += _section("## Evaluation steps", self.evaluation_steps)
        lines += ["# The request"]
        for name in self.case_variables:
            lines += [f"## {name}", case[name], ""]
        for label, values in (("A", first), ("B", second)):
            lines += [f"# Agent {label}"]
            for name in self.agent_variables:
                lines += [f"## {name} of agent {label}", values[name], ""]
        return "\n".join(lines).rstrip()

    @property
    def template(self) -> str:
        """The prompt with ``{placeholders}``: ``{name}`` for case fields, ``{name_a}`` / ``{name_b}`` for agent fields."""
        return self._compose(
            {n: "{" + n + "}" for n in self.case_variables},
            {n: "{" + n + "_a}" for n in self.agent_variables},
            {n: "{" + n + "_b}" for n in self.agent_variables},
        )

    def render(self, case: Mapping[str, Any], first: Mapping[str, Any], second: Mapping[str, Any]) -> str:
        """The prompt for one case, with ``first`` shown as agent A and ``second`` as agent B."""
        return self._compose(
            {n: _render_value(case[n]) for n in self.case_variables},
            {n: _render_value(first[n]) for n in self.agent_variables},
            {n: _render_value(second[n]) for n in self.agent_variables},
        )

    def __str__(self) -> str:
        return self.template


class FreeformPairwiseTemplate(FreeformPointwiseTemplate):
    """A user's pairwise prompt string: ``{response_a}``, ``{response_b}``, ``{predicted_trajectory_a}``... and case fields."""

    def __init__(self, text: str, owner: str) -> None:
        super().__init__(text, owner)
        agent = [n for n in self.input_variables if n[:-2] in _AGENT_FIELDS and n[-2:] in ("_a", "_b")]
        if not {"response_a", "response_b"} <= set(agent):
            raise MetricError(f"{owner}: a pairwise prompt template must use {{response_a}} and {{response_b}}")
        self.case_variables = [n for n in self.input_variables if n not in agent]
        self.agent_variables = sorted({n[:-2] for n in agent}, key=_AGENT_FIELDS.index)
        self._agent_placeholders = agent

    def render(self, case: Mapping[str, Any], first: Mapping[str, Any], second: Mapping[str, Any]) -> str:  # type: ignore[override]
        values = {n: case[n] for n in self.case_variables}
        for name in self._agent_placeholders:
            values[name] = (first if name.endswith("_a") else second)[name[:-2]]
        return super().render(values)


def pointwise_template(
    template: PointwiseMetricPromptTemplate | str, owner: str
) -> PointwiseMetricPromptTemplate | FreeformPointwiseTemplate:
    """A pointwise metric's template from a :class:`PointwiseMetricPromptTemplate` or a prompt string; ``owner`` names the metric in errors."""
    if isinstance(template, str):
        return FreeformPointwiseTemplate(template, owner)
    if isinstance(template, PointwiseMetricPromptTemplate):
        return template
    raise MetricError(
        f"{owner}: metric_prompt_template must be a PointwiseMetricPromptTemplate or a str, got {type(template).__name__}"
    )


def pairwise_template(
    template: PairwiseMetricPromptTemplate | str | None, owner: str
) -> PairwiseMetricPromptTemplate | FreeformPairwiseTemplate:
    """A pairwise metric's template: the default one for None, a :class:`PairwiseMetricPromptTemplate`, or a prompt string."""
    if template is None:
        return PairwiseMetricPromptTemplate()
    if isinstance(template, str):
        return FreeformPairwiseTemplate(template, owner)
    if isinstance(template, PairwiseMetricPromptTemplate):
        return template
    raise MetricError(
        f"{owner}: metric_prompt_template must be a PairwiseMetricPromptTemplate or a str, got {type(template).__name__}"
    )


# ---------------------------------------------------------------------------------------------
# The answer asked for
# ---------------------------------------------------------------------------------------------


def answer_format(field: str, choices: Sequence[str] | None) -> str:
    """The closing section of a prompt: answer with one JSON object holding an explanation and ``field`` (one of ``choices``, or a number)."""
    allowed = f"one of: {', '.join(choices)}" if choices else "a number"
    return (
        "# Your answer\n"
        "Reply with one JSON object and nothing else:\n"
        f'{{"explanation": "<why, in a few sentences>", "{field}": "<{allowed}>"}}'
    )


def expected_json(field: str, choices: Sequence[str] | None, *, example: str) -> str:
    """The answer :func:`answer_format` asks for, in one line with a literal example, as errors and warnings say it."""
    allowed = f"{field} one of {', '.join(choices)}" if choices else f"{field} a number"
    return f'a JSON object like {{"explanation": "...", "{field}": "{example}"}} ({allowed})'


def answer_schema(field: str, choices: Sequence[str] | None, description: str) -> dict[str, Any]:
    """The JSON schema of the same answer, for models that give structured output."""
    value: dict[str, Any] = (
        {"type": "string", "enum": list(choices), "description": f"One of: {', '.join(choices)}."}
        if choices
        else {"type": "number", "description": "The score."}
    )
    return {
        "title": "judgement",
        "description": description,
        "type": "object",
        "properties": {
            "explanation": {"type": "string", "description": "Why, in a few sentences."},
            field: value,
        },
        "required": ["explanation", field],
    }
