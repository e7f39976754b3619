"""ADK's judged criteria give ADK's numbers: ADK's own evaluators, judged by a scripted model registered in
ADK's LLM registry, against levelfield's metrics judged by a scripted chat model giving the same answers.

The judge's answers depend only on what both prompts show (the agent's answer, the rubric ids), so
both sides hear the same verdicts; scores, per-turn scores and pass/fail must agree, on single- and
multi-turn cases, in English and Japanese. Efficiency criteria are compared with ADK's evaluators
directly on the same invocations.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

import levelfield as lf
from levelfield._core.data.dataset import EvalCase, EvalDataset, Turn
from levelfield._core.results.case_verdicts import apply_criteria
from levelfield._core.results.criteria import criteria_metrics, load_criteria
from levelfield.testing import ScriptedChatModel, last_human_text

adk_eval = pytest.importorskip("google.adk.evaluation")

from google.adk.evaluation.eval_case import Invocation, InvocationEvent, InvocationEvents  # noqa: E402
from google.adk.evaluation.eval_config import EvalConfig, get_eval_metrics_from_config  # noqa: E402
from google.adk.evaluation.eval_metrics import EvalMetric, EvalStatus  # noqa: E402
from google.adk.evaluation.eval_rubrics import Rubric as AdkRubric  # noqa: E402
from google.adk.evaluation.metric_evaluator_registry import DEFAULT_METRIC_EVALUATOR_REGISTRY  # noqa: E402
from google.adk.models.base_llm import BaseLlm  # noqa: E402
from google.adk.models.llm_request import LlmRequest  # noqa: E402
from google.adk.models.llm_response import LlmResponse  # noqa: E402
from google.adk.models.registry import LLMRegistry  # noqa: E402
from google.genai import types  # noqa: E402

# -- the scripted judge, on both sides ---------------------------------------------------------------

POLICIES: dict[str, Callable[[str], str]] = {}
"""Judge model name -> policy(prompt) -> answer; ADK instantiates its judge by name, so it looks it up here."""


class ScriptedJudgeLlm(BaseLlm):
    """An ADK model that answers every request with its policy's answer to the prompt text (no network)."""

    @classmethod
    def supported_models(cls) -> list[str]:
        return [r"levelfield-scripted-judge-.*"]

    async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
        prompt = "".join(p.text or "" for p in llm_request.contents[-1].parts)
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=POLICIES[self.model](prompt))]))


LLMRegistry.register(ScriptedJudgeLlm)


class Sequenced:
    """A policy that answers the n-th time it sees a question with the n-th of its answers to it (the last repeats),
    so several samples of one question can disagree, on either side, however they are scheduled."""

    def __init__(self, answer: Callable[[str, int], str]) -> None:
        self.answer = answer
        self.seen: Counter[str] = Counter()

    def __call__(self, prompt: str) -> str:
        key = _question_key(prompt)
        n = self.seen[key]
        self.seen[key] += 1
        return self.answer(prompt, n)


def _question_key(prompt: str) -> str:
    # The same question on both sides: which turn's answer it is about, and which rubrics it asks.
    return "|".join(sorted(set(re.findall(r"\[id: ([^\]]+)\]", prompt)))) + "|" + "|".join(a for a in ANSWERS if a in prompt)


ANSWERS: list[str] = []
"""Agents' answers the policies look for in a prompt (registered by the cases below)."""


def judge_pair(policy: Callable[[str], str], name: str) -> tuple[str, Any]:
    """ADK's judge model name and levelfield's judge, both answering with ``policy`` (separate counters)."""
    adk_name = f"levelfield-scripted-judge-{name}"
    POLICIES[adk_name] = policy
    twin = Sequenced(policy.answer) if isinstance(policy, Sequenced) else policy
    return adk_name, ScriptedChatModel(lambda messages: twin(last_human_text(messages)), model_name=f"lf-{name}")


# -- the cases -----------------------------------------------------------------------------------------


@dataclass
class Call:
    name: str
    args: dict[str, Any]
    output: Any


@dataclass
class TurnData:
    prompt: str
    response: str
    reference: str
    calls: list[Call] = field(default_factory=list)
    rubrics: list[dict[str, Any]] = field(default_factory=list)


def _rubric(rid: str, text: str, kind: str) -> dict[str, Any]:
    return {"rubric_id": rid, "rubric_content": {"text_property": text}, "type": kind}


ENGLISH = [
    TurnData("What's the weather in Paris?", "It is 21°C and sunny in Paris.", "21 degrees and sunny",
             [Call("get_weather", {"city": "Paris"}, {"temp_c": 21, "sky": "sunny"})]),
    TurnData("And in Oslo?", "It is 30°C in Oslo.", "4 degrees and raining",
             [Call("get_weather", {"city": "Oslo"}, {"temp_c": 4, "sky": "rain"})]),
]
JAPANESE = [
    TurnData("東京の天気は？", "東京は18度で晴れです。", "18度、晴れ",
             [Call("get_weather", {"city": "東京"}, {"temp_c": 18, "sky": "晴れ"})]),
    TurnData("大阪は？", "大阪は35度です。", "12度、雨",
             [Call("get_weather", {"city": "大阪"}, {"temp_c": 12, "sky": "雨"})]),
]
GOOD = {"It is 21°C and sunny in Paris.", "東京は18度で晴れです。"}
"""The answers the scripted judge finds right; the others are wrong."""
ANSWERS += [t.response for t in ENGLISH + JAPANESE]

RUBRICS = {
    "en": [("r_temp", "The answer gives the temperature the tool returned."), ("r_short", "The answer is one sentence.")],
    "ja": [("r_temp", "回答はツールが返した気温を伝えている。"), ("r_short", "回答は一文である。")],
}


def _adk_invocation(turn: TurnData, n: int, rubrics: list[dict[str, Any]] | None = None) -> Invocation:
    events = []
    for i, call in enumerate(turn.calls):
        cid = f"call-{n}-{i}"
        events.append(InvocationEvent(author="weather_agent", content=types.Content(role="model", parts=[
            types.Part(function_call=types.FunctionCall(id=cid, name=call.name, args=call.args))])))
        events.append(InvocationEvent(author="weather_agent", content=types.Content(role="user", parts=[
            types.Part(function_response=types.FunctionResponse(id=cid, name=call.name, response=call.output))])))
    return Invocation(
        invocation_id=f"inv-{n}",
        user_content=types.Content(role="user", parts=[types.Part(text=turn.prompt)]),
        final_response=types.Content(role="model", parts=[types.Part(text=turn.response)]),
        intermediate_data=InvocationEvents(invocation_events=events),
        rubrics=[AdkRubric.model_validate(r) for r in rubrics] if rubrics else None,
    )


def _expected(turn: TurnData, n: int) -> Invocation:
    return Invocation(
        invocation_id=f"exp-{n}",
        user_content=types.Content(role="user", parts=[types.Part(text=turn.prompt)]),
        final_response=types.Content(role="model", parts=[types.Part(text=turn.reference)]),
    )


def _lf_case(turns: list[TurnData], turn_rubrics: list[list[dict[str, Any]]] | None = None) -> EvalCase:
    lf_turns = [
        Turn(prompt=t.prompt, reference=t.reference, response=t.response,
             predicted_trajectory=[lf.ToolCall(tool_name=c.name, tool_input=c.args, tool_output=c.output) for c in t.calls])
        for t in turns
    ]
    metadata = {"turn_rubrics": turn_rubrics} if turn_rubrics else {}
    last = lf_turns[-1]
    return EvalCase(case_id="case", prompt=lf_turns[0].prompt, reference=last.reference, response=last.response,
                    predicted_trajectory=last.predicted_trajectory, turns=lf_turns if len(lf_turns) > 1 else [],
                    metadata=metadata)


def _adk_evaluate(name: str, criterion: dict[str, Any], actual: list[Invocation], expected: list[Invocation] | None) -> Any:
    (metric,) = [m for m in get_eval_metrics_from_config(EvalConfig(criteria={name: criterion})) if m.metric_name == name]
    evaluator = DEFAULT_METRIC_EVALUATOR_REGISTRY.get_evaluator(metric)
    out = evaluator.evaluate_invocations(actual, expected)
    return asyncio.run(out) if asyncio.iscoroutine(out) else out


def _lf_evaluate(name: str, criterion: dict[str, Any], case: EvalCase, judge: Any) -> tuple[dict[str, Any], bool]:
    criteria = load_criteria({name: criterion})
    metrics = criteria_metrics(criteria, judge=judge)
    for m in metrics:
        m.cache = None  # every sample asks the scripted judge
    result = lf.evaluate(EvalDataset([case]), metrics=metrics, progress=False)
    (verdict,) = apply_criteria(result, criteria)
    return result.scores[0], verdict.passed


def _same(lf_value: Any, adk_value: Any) -> bool:
    if adk_value is None:
        return lf_value is None or lf_value != lf_value
    return lf_value == pytest.approx(adk_value)


# -- final_response_match_v2 -------------------------------------------------------------------------


def _valid_policy(prompt: str, n: int) -> str:
    # Samples disagree: a right answer is called valid 3 times of 5, a wrong one valid 2 times of 5.
    good = any(a in prompt for a in GOOD)
    valid = (n % 5 in (0, 1, 3)) if good else (n % 5 in (2, 4))
    return json.dumps({"reasoning": "checked against the reference", "is_the_agent_response_valid": "valid" if valid else "invalid"})


@pytest.mark.parametrize("language", ["en", "ja"])
@pytest.mark.parametrize("turns", [1, 2])
def test_final_response_match_v2_agrees_with_adk(language, turns):
    data = (ENGLISH if language == "en" else JAPANESE)[:turns]
    adk_name, judge = judge_pair(Sequenced(_valid_policy), f"frm-{language}-{turns}")
    criterion = {"threshold": 0.6, "judge_model_options": {"judge_model": adk_name, "num_samples": 5}}
    adk = _adk_evaluate("final_response_match_v2", criterion,
                        [_adk_invocation(t, i) for i, t in enumerate(data)], [_expected(t, i) for i, t in enumerate(data)])
    scores, passed = _lf_evaluate("final_response_match_v2", criterion, _lf_case(data), judge)
    assert scores["final_response_match_v2/score"] == pytest.approx(adk.overall_score)
    assert [_same(v, r.score) for v, r in zip(scores["final_response_match_v2/per_turn"], adk.per_invocation_results)] == [True] * turns
    assert passed == (adk.overall_eval_status == EvalStatus.PASSED)
    assert scores["final_response_match_v2/agreement"] == pytest.approx(0.6)  # 3 of 5 samples agree on every turn
    assert passed == (turns == 1)


# -- the rubric-based criteria -----------------------------------------------------------------------


def _rubric_answer(prompt: str, n: int) -> str:
    """One block per rubric shown: r_temp met only by the right answers; r_short always; the third sample disagrees on r_short."""
    good = any(a in prompt for a in GOOD)
    blocks = []
    for rid, text in re.findall(r"\[id: ([^\]]+)\] (.*)", prompt):
        met = good if rid == "r_temp" else (n % 3 != 2)
        blocks.append(f"ID: {rid}\nProperty: {text.strip()}\nRationale: looked at the answer and the tool results\nVerdict: {'yes' if met else 'no'}")
    return "\n\n".join(blocks)


def _rubrics(language: str, kind: str) -> list[dict[str, Any]]:
    return [_rubric(rid, text, kind) for rid, text in RUBRICS[language]]


@pytest.mark.parametrize("name, kind", [
    ("rubric_based_final_response_quality_v1", "FINAL_RESPONSE_QUALITY"),
    ("rubric_based_tool_use_quality_v1", "TOOL_USE_QUALITY"),
])
@pytest.mark.parametrize("language", ["en", "ja"])
@pytest.mark.parametrize("turns", [1, 2])
@pytest.mark.parametrize("where", ["criterion", "invocation"])
def test_rubric_based_criteria_agree_with_adk(name, kind, language, turns, where):
    data = (ENGLISH if language == "en" else JAPANESE)[:turns]
    adk_name, judge = judge_pair(Sequenced(_rubric_answer), f"{name}-{language}-{turns}-{where}")
    rubrics = _rubrics(language, kind)
    criterion: dict[str, Any] = {"threshold": 0.75, "judge_model_options": {"judge_model": adk_name, "num_samples": 3}}
    if where == "criterion":
        criterion["rubrics"] = rubrics
    per_turn = None if where == "criterion" else [rubrics] * turns
    adk = _adk_evaluate(name, criterion, [_adk_invocation(t, i, per_turn[i] if per_turn else None) for i, t in enumerate(data)], None)
    scores, passed = _lf_evaluate(name, criterion, _lf_case(data, per_turn), judge)
    assert scores[f"{name}/score"] == pytest.approx(adk.overall_score)
    assert [_same(v, r.score) for v, r in zip(scores[f"{name}/per_turn"], adk.per_invocation_results)] == [True] * turns
    assert passed == (adk.overall_eval_status == EvalStatus.PASSED)
    # Every verdict is kept with its rationale, turn by turn, as ADK's rubric scores are.
    ours = [(v["id"], v["score"]) for v in scores[f"{name}/rubrics"]]
    theirs = [(s.rubric_id, s.score) for r in adk.per_invocation_results for s in r.rubric_scores]
    assert ours == theirs
    assert all(v["rationale"] for v in scores[f"{name}/rubrics"])
    assert scores[f"{name}/agreement"] == pytest.approx((1 + 2 / 3) / 2)  # r_temp unanimous, r_short 2 of 3


def _trajectory_answer(prompt: str, n: int) -> str:
    # Over the whole conversation: met when it holds no wrong answer; r_short always met.
    clean = not any(a in prompt for a in ANSWERS if a not in GOOD)
    blocks = []
    for rid, text in re.findall(r"\[id: ([^\]]+)\] (.*)", prompt) or re.findall(r'"id": "([^"]+)",\s*"property": "([^"]*)"', prompt):
        met = clean if rid == "r_temp" else True
        blocks.append(f"ID: {rid}\nProperty: {text.strip()}\nRationale: read every turn\nVerdict: {'yes' if met else 'no'}")
    return "\n\n".join(blocks)


@pytest.mark.parametrize("language", ["en", "ja"])
@pytest.mark.parametrize("turns", [1, 2])
def test_rubric_based_multi_turn_trajectory_quality_agrees_with_adk(language, turns):
    name = "rubric_based_multi_turn_trajectory_quality_v1"
    data = (ENGLISH if language == "en" else JAPANESE)[:turns]
    adk_name, judge = judge_pair(Sequenced(_trajectory_answer), f"traj-{language}-{turns}")
    criterion = {"threshold": 0.75, "rubrics": _rubrics(language, "TRAJECTORY_QUALITY"),
                 "judge_model_options": {"judge_model": adk_name, "num_samples": 1}}
    adk = _adk_evaluate(name, criterion, [_adk_invocation(t, i) for i, t in enumerate(data)], None)
    scores, passed = _lf_evaluate(name, criterion, _lf_case(data), judge)
    assert scores[f"{name}/score"] == pytest.approx(adk.overall_score)
    assert [_same(v, r.score) for v, r in zip(scores[f"{name}/per_turn"], adk.per_invocation_results)] == [True] * turns
    assert passed == (adk.overall_eval_status == EvalStatus.PASSED)
    assert passed == (turns == 1)


# -- hallucinations_v1 ---------------------------------------------------------------------------------


def _hallucination_answer(prompt: str) -> str:
    """Segments the answer into sentences, then labels each: supported when it holds the tool's number."""
    if "<sentences>" in prompt or "**Sentences Begin**" in prompt:
        sentences = re.findall(r"<sentence>(.*?)</sentence>", prompt.split("<sentences>")[-1].split("**Sentences Begin**")[-1], re.DOTALL)
        blocks = []
        for s in sentences:
            supported = any(t in s for t in ("21°C", "18度", "sunny", "晴れ"))
            label = "supported" if supported else ("not_applicable" if s.strip().startswith(("Enjoy", "良い")) else "contradictory")
            blocks.append(f"sentence: {s}\nlabel: {label}\nrationale: compared with the tool output\n"
                          f"supporting_excerpt: null\ncontradicting_excerpt: null")
        return "\n".join(blocks)
    answer = next(a for a in HALLUCINATION_ANSWERS if a in prompt)
    return "\n".join(f"<sentence>{s.strip()}</sentence>" for s in re.findall(r"[^.。!]+[.。!]", answer))


HALLUCINATION_ANSWERS = ["It is 21°C in Paris. It is sunny. Enjoy!", "It is 30°C in Oslo. Take sunglasses.",
                         "東京は18度です。晴れです。良い一日を。", "大阪は35度です。"]


@pytest.mark.parametrize("language", ["en", "ja"])
@pytest.mark.parametrize("turns", [1, 2])
def test_hallucinations_v1_agrees_with_adk(language, turns):
    base = ENGLISH if language == "en" else JAPANESE
    offset = 0 if language == "en" else 2
    data = [TurnData(t.prompt, HALLUCINATION_ANSWERS[offset + i], t.reference, t.calls) for i, t in enumerate(base[:turns])]
    adk_name, judge = judge_pair(_hallucination_answer, f"hall-{language}-{turns}")
    criterion = {"threshold": 0.8, "judge_model_options": {"judge_model": adk_name}}
    adk = _adk_evaluate("hallucinations_v1", criterion, [_adk_invocation(t, i) for i, t in enumerate(data)], None)
    scores, passed = _lf_evaluate("hallucinations_v1", criterion, _lf_case(data), judge)
    assert scores["hallucinations_v1/score"] == pytest.approx(adk.overall_score)
    assert [_same(v, r.score) for v, r in zip(scores["hallucinations_v1/per_turn"], adk.per_invocation_results)] == [True] * turns
    assert passed == (adk.overall_eval_status == EvalStatus.PASSED)
    assert passed == (turns == 1)


# -- efficiency ------------------------------------------------------------------------------------------


def _usage(prompt: int | None, out: int | None) -> types.GenerateContentResponseUsageMetadata:
    return types.GenerateContentResponseUsageMetadata(prompt_token_count=prompt, candidates_token_count=out)


def _efficiency_invocations() -> list[Invocation]:
    """Three turns: two model calls and a tool call with usage; one model call without usage; no model call at all."""
    call = types.Part(function_call=types.FunctionCall(id="c1", name="get_weather", args={"city": "Zürich"}))
    reply = types.Part(function_response=types.FunctionResponse(id="c1", name="get_weather", response={"temp_c": 9}))
    text = types.Part(text="9 °C in Zürich.")
    first = [
        InvocationEvent(author="a", content=types.Content(role="model", parts=[call]), usage_metadata=_usage(120, 12), model_version="m"),
        InvocationEvent(author="a", content=types.Content(role="user", parts=[reply])),
        InvocationEvent(author="a", content=types.Content(role="model", parts=[text]), usage_metadata=_usage(150, 8), model_version="m"),
    ]
    second = [InvocationEvent(author="a", content=types.Content(role="model", parts=[types.Part(text="Gern.")]), model_version="m")]
    return [
        Invocation(user_content=types.Content(role="user", parts=[types.Part(text=q)]), final_response=types.Content(role="model", parts=[types.Part(text=a)]),
                   intermediate_data=InvocationEvents(invocation_events=events))
        for q, a, events in (("Wetter in Zürich?", "9 °C in Zürich.", first), ("Danke!", "Gern.", second), ("Tschüss", "", []))
    ]


def test_efficiency_criteria_equal_adks_evaluators_on_the_same_invocations():
    from levelfield.formats.adk import outputs_from_invocations

    invocations = _efficiency_invocations()
    outputs = outputs_from_invocations([json.loads(i.model_dump_json()) for i in invocations])
    case = EvalCase(case_id="c", prompt="Wetter in Zürich?",
                    turns=[Turn(prompt=i.user_content.parts[0].text) for i in invocations])
    run = lf.AgentRun(case_id="c", agent_name="a", output=outputs[-1], turns=outputs, latency_in_seconds=0.1)
    from levelfield._core.score.scoring import context_for

    ctx = context_for(case, run)
    for name in ("tool_call_count_v1", "inference_call_count_v1", "token_usage_v1"):
        adk = _adk_evaluate_no_threshold(name, invocations)
        (metric,) = lf.metrics.resolve_metrics([name])
        ours = metric.score(ctx)
        assert ours.value == pytest.approx(adk.overall_score), name
        assert [_same(v, r.score) for v, r in zip(ours.extra["per_turn"], adk.per_invocation_results)] == [True] * 3, name


def _adk_evaluate_no_threshold(name: str, invocations: list[Invocation]) -> Any:
    evaluator = DEFAULT_METRIC_EVALUATOR_REGISTRY.get_evaluator(EvalMetric(metric_name=name))
    return evaluator.evaluate_invocations(invocations, None)
