"""LLM-judged metrics, offline: scripted judge chat models stand in for the judge, real everything else."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import PrivateAttr

import levelfield as lf
from levelfield._core.score.metrics.base import ScoringContext
from levelfield.judge import parse_preference, parse_rating
from levelfield.metrics import Judge, JudgeCache
from levelfield.testing import ScriptedChatModel, last_human_text
from levelfield.testing.chat_model import count_tokens
from samples.home_automation.agents.function_agents import careful_agent, hasty_agent

DATASET = Path(__file__).resolve().parents[2] / "samples" / "home_automation" / "dataset.jsonl"

FOLLOWS = lf.metrics.PointwiseMetricPromptTemplate(
    criteria={"Follows trajectory": "Does the response follow from the tool calls the agent made?"},
    rating_rubric={"1": "Follows trajectory", "0": "Does not follow trajectory"},
    input_variables=["prompt", "predicted_trajectory"],
)
GRADED = lf.metrics.PointwiseMetricPromptTemplate(
    criteria={"Quality": "How good is the response?"},
    rating_rubric={str(i): f"rating {i}" for i in range(5, 0, -1)},
    input_variables=["prompt"],
)


@pytest.fixture(autouse=True)
def _cache_in_tmp(tmp_path, monkeypatch):
    # The default cache lives under the working directory; keep tests out of the repo.
    monkeypatch.setenv("LEVELFIELD_CACHE_DIR", str(tmp_path / "cache"))


def ctx(**fields: Any) -> ScoringContext:
    base: dict[str, Any] = dict(
        case_id="c1",
        prompt="Turn on device_1.",
        response="device_1 is on.",
        predicted_trajectory=[lf.ToolCall(tool_name="set_device_info", tool_input={"device_id": "device_1"}, tool_output="ok")],
    )
    base.update(fields)
    return ScoringContext(**base)


class Scripted:
    """A text-answering scripted judge: replies in turn (the last repeats), recording every prompt it saw."""

    def __init__(self, *replies: Any, name: str = "judge-1") -> None:
        self.replies = list(replies)
        self.prompts: list[str] = []
        self.model = ScriptedChatModel(self, model_name=name)

    def __call__(self, messages):
        self.prompts.append(last_human_text(messages))
        reply = self.replies[min(len(self.prompts) - 1, len(self.replies) - 1)]
        if isinstance(reply, BaseException):
            raise reply
        return reply(last_human_text(messages)) if callable(reply) else reply

    @property
    def calls(self) -> int:
        return len(self.prompts)


class RateLimitError(Exception):
    """Shaped like a provider SDK's 429 error."""

    status_code = 429


class SlowJudge(BaseChatModel):
    """An async judge that takes a moment per answer and records how many calls were in flight at once."""

    in_flight: int = 0
    most_in_flight: int = 0

    @property
    def _llm_type(self) -> str:
        return "slow-test-judge"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:  # pragma: no cover
        raise NotImplementedError

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await asyncio.sleep(0.01)
        finally:
            self.in_flight -= 1
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content="score: 1"))])


JUDGE_FIELDS = {f.name for f in dataclasses.fields(lf.JudgeConfig)}


def metric(judge: Any, template: Any = FOLLOWS, **options: Any) -> lf.metrics.PointwiseMetric:
    """A pointwise metric asking in text and retrying at once; the JudgeConfig fields among ``options`` go in its judge_config."""
    how = {"structured_output": False, "backoff": 0.0, **{k: options.pop(k) for k in list(options) if k in JUDGE_FIELDS}}
    return lf.metrics.PointwiseMetric("follows", template, judge, judge_config=lf.JudgeConfig(**how), **options)


# --- templates ---------------------------------------------------------------------------------


def test_template_renders_criteria_rubric_and_trajectory_as_json():
    text = metric(Scripted("score: 1").model).render(ctx())
    assert "Follows trajectory: Does the response follow" in text
    assert "1: Follows trajectory" in text and "0: Does not follow trajectory" in text
    rendered = text.split("## predicted_trajectory\n", 1)[1].split("\n\n", 1)[0]
    assert json.loads(rendered) == [
        {"tool_name": "set_device_info", "tool_input": {"device_id": "device_1"}, "tool_output": "ok"}
    ]


def test_template_always_shows_the_response_last():
    assert FOLLOWS.input_variables == ["prompt", "predicted_trajectory", "response"]
    assert FOLLOWS.template.rstrip().endswith("## response\n{response}")


def test_freeform_template_fills_placeholders_and_asks_for_a_number():
    m = metric(Scripted("score: 3").model, "Rate 1-5 how polite this is: {response} (asked: {prompt})")
    text = m.render(ctx())
    assert text.startswith("Rate 1-5 how polite this is: device_1 is on. (asked: Turn on device_1.)")
    assert '"score": "<a number>"' in text


def test_freeform_template_can_use_a_dataset_column():
    m = metric(Scripted("score: 1").model, "User tier {tier}: {response}")
    assert m.render(ctx(metadata={"tier": "gold"})).startswith("User tier gold: device_1 is on.")


def test_placeholder_the_row_lacks_is_an_error_naming_it_and_the_case():
    m = metric(Scripted("score: 1").model, "Judge {response} given {user_mood}")
    with pytest.raises(lf.MetricError, match=r"\{user_mood\}.*case 'c1'"):
        m.render(ctx())


def test_positional_placeholder_is_rejected_at_construction():
    with pytest.raises(lf.MetricError, match="not a plain field name"):
        metric(Scripted("score: 1").model, "Judge {} please")


def test_word_ratings_need_rubric_scores():
    words = lf.metrics.PointwiseMetricPromptTemplate(
        criteria={"c": "d"}, rating_rubric={"pass": "good", "fail": "bad"}, input_variables=["prompt"]
    )
    with pytest.raises(lf.MetricError, match="rubric_scores"):
        metric(Scripted("score: pass").model, words)
    m = metric(Scripted("score: pass").model, words, rubric_scores={"pass": 1, "fail": 0})
    assert m.score(ctx()).value == 1.0


# --- answers -----------------------------------------------------------------------------------


def test_well_formed_text_answer_gives_score_and_explanation():
    judge = Scripted('Looks right.\n{"explanation": "The call matches the claim.", "score": "1"}')
    score = metric(judge.model).score(ctx())
    assert (score.value, score.explanation, score.failed) == (1.0, "The call matches the claim.", False)
    assert judge.calls == 1


def test_structured_output_is_used_when_the_model_supports_it():
    judge = Scripted(AIMessage(content="", tool_calls=[{"name": "judgement", "args": {"explanation": "fine", "score": "0"}, "id": "1"}]))
    m = metric(judge.model, structured_output=None)
    assert m.judge.mode(m._schema) == "structured"
    score = m.score(ctx())
    assert (score.value, score.explanation) == (0.0, "fine")


def test_structured_judge_that_answers_in_text_is_still_parsed():
    score = metric(Scripted("Rating: 1").model, structured_output=None).score(ctx())
    assert score.value == 1.0 and not score.failed


def test_model_without_structured_output_is_asked_for_text():
    m = metric(FakeListChatModel(responses=["**Score:** 0"]), structured_output=None)
    assert m.judge.mode(m._schema) == "text"
    assert m.score(ctx()).value == 0.0


def test_malformed_answer_is_a_judge_failure_keeping_the_raw_answer():
    score = metric(Scripted("I would rather not say.").model).score(ctx())
    assert math.isnan(score.value) and score.failed
    assert score.explanation is None  # what the judge said is not an explanation of a score
    assert score.extra["unreadable_answer"] == "I would rather not say."
    assert "could not be read" in score.error and "'I would rather not say.'" in score.error


def test_rating_outside_the_rubric_is_nan_not_a_guess():
    score = metric(Scripted("score: 7").model).score(ctx())
    assert math.isnan(score.value) and score.failed


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Score: 4", 4.0),
        ("**Rating:** 4/5", 4.0),
        ("```json\n{\"rating\": 2, \"reasoning\": \"meh\"}\n```", 2.0),
        ("Reasoning first.\nScore: 5\nFinal score: 3", 3.0),
        ("5", 5.0),
        ("score: 0", None),
        ("No rating here.", None),
    ],
)
def test_parse_rating_reads_common_answer_shapes(text, expected):
    got = parse_rating(text, {str(i): float(i) for i in range(1, 6)})
    assert (got[0] if got else None) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [("Winner: A", "A"), ("[[B]]", "B"), ('{"winner": "SAME"}', "tie"), ("Verdict: Response B", "B"), ("unsure", None)],
)
def test_parse_preference_reads_common_answer_shapes(text, expected):
    got = parse_preference(text)
    assert (got[0] if got else None) == expected


# --- judge errors, retries, concurrency -----------------------------------------------------------


def test_transient_judge_error_is_retried():
    judge = Scripted(RateLimitError("slow down"), RateLimitError("slow down"), "score: 1")
    score = metric(judge.model, retries=3).score(ctx())
    assert score.value == 1.0 and judge.calls == 3 and score.extra["judge_calls"] == 3


def test_non_transient_judge_error_is_nan_failed_without_retry():
    judge = Scripted(PermissionError("bad key"))
    score = metric(judge.model, retries=3).score(ctx())
    assert math.isnan(score.value) and score.failed and judge.calls == 1
    assert score.extra["error"] == "PermissionError: bad key"


def test_transient_error_that_persists_gives_nan_after_the_retries():
    judge = Scripted(RateLimitError("slow down"))
    score = metric(judge.model, retries=2).score(ctx())
    # A lone 429 without Retry-After is first tried again a few times by the adaptive limit (the
    # provider may still be freeing calls it answered), then the judge's own retries decide.
    from levelfield._core.run.limits import _LONE_TRIES

    assert math.isnan(score.value) and score.failed and judge.calls == 3 + _LONE_TRIES
    judge = Scripted(RateLimitError("slow down"))
    from levelfield.metrics import Judge

    fixed = Judge(judge.model, retries=2, backoff=0.0, structured_output=False, adaptive=False)
    score = lf.metrics.PointwiseMetric("follows", FOLLOWS, fixed).score(ctx())
    assert math.isnan(score.value) and score.failed and judge.calls == 3


def test_judge_calls_respect_the_judge_concurrency_limit():
    model = SlowJudge()
    m = metric(model, concurrency=2, cache=False)

    async def many():
        return await asyncio.gather(*(m.ascore(ctx(case_id=f"c{i}")) for i in range(8)))

    scores = asyncio.run(many())
    assert [s.value for s in scores] == [1.0] * 8
    assert model.most_in_flight == 2


def test_metrics_given_the_same_model_share_one_judge():
    model = Scripted("score: 1").model
    assert metric(model).judge is lf.metrics.judged.safety(model, judge_config=lf.JudgeConfig(structured_output=False, backoff=0.0)).judge


# --- sampling ----------------------------------------------------------------------------------


def test_num_samples_takes_the_majority_and_reports_agreement():
    judge = Scripted("score: 1", "score: 0", "score: 1")
    score = metric(judge.model, samples=3).score(ctx())
    assert judge.calls == 3
    assert score.value == 1.0 and score.extra["agreement"] == pytest.approx(2 / 3)


def test_num_samples_on_a_graded_rubric_takes_the_mean():
    judge = Scripted("score: 4", "score: 5", "score: 3")
    score = metric(judge.model, GRADED, samples=3).score(ctx())
    assert score.value == 4.0 and score.extra["agreement"] == pytest.approx(1 / 3)


def test_a_sample_that_cannot_be_parsed_is_left_out_and_counted():
    judge = Scripted("score: 0", "gibberish", "score: 0")
    score = metric(judge.model, samples=3).score(ctx())
    assert score.value == 0.0 and score.extra["samples_failed"] == 1 and not score.failed


# --- cache -------------------------------------------------------------------------------------


def test_second_run_is_answered_from_the_cache_without_calling_the_judge(tmp_path):
    first, second = Scripted("score: 1", name="same"), Scripted("score: 0", name="same")
    m1 = metric(first.model, cache=tmp_path / "c")
    a = m1.score(ctx())
    b = metric(second.model, cache=tmp_path / "c").score(ctx())
    assert (first.calls, second.calls) == (1, 0)
    assert b.value == a.value == 1.0
    assert b.extra["judge_calls"] == 0 and b.usage.total_tokens == 0


def test_cache_is_keyed_by_the_judge_model(tmp_path):
    first, other = Scripted("score: 1", name="model-a"), Scripted("score: 0", name="model-b")
    metric(first.model, cache=tmp_path).score(ctx())
    assert metric(other.model, cache=tmp_path).score(ctx()).value == 0.0 and other.calls == 1


def test_cache_is_keyed_by_the_rendered_prompt(tmp_path):
    judge = Scripted("score: 1")
    m = metric(judge.model, cache=tmp_path)
    m.score(ctx(response="one"))
    m.score(ctx(response="two"))
    m.score(ctx(response="one"))
    assert judge.calls == 2


def test_cache_false_calls_the_judge_every_time():
    judge = Scripted("score: 1")
    m = metric(judge.model, cache=False)
    m.score(ctx())
    m.score(ctx())
    assert judge.calls == 2


class TunableJudge(BaseChatModel):
    """A judge shaped like a provider's chat model: settings as fields; its answer depends on them."""

    model_name: str = "tunable-1"
    temperature: float = 0.0
    base_url: str = "http://127.0.0.1:1/v1"
    _calls: int = PrivateAttr(default=0)

    @property
    def calls(self) -> int:
        return self._calls

    @property
    def _llm_type(self) -> str:
        return "tunable-test-judge"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        # Like many providers, names only the model here: the other settings must still count.
        return {"model_name": self.model_name}

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        self._calls += 1
        default = (self.model_name, self.temperature, self.base_url) == ("tunable-1", 0.0, "http://127.0.0.1:1/v1")
        rating = "1" if default else "0"
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=f"score: {rating}"))])


@pytest.mark.parametrize("setting", [{"temperature": 0.9}, {"base_url": "http://127.0.0.1:2/v2"}, {"model_name": "tunable-2"}])
def test_judges_of_one_class_differing_in_one_setting_do_not_share_answers(tmp_path, setting):
    first, other = TunableJudge(), TunableJudge(**setting)
    assert metric(first, cache=tmp_path).score(ctx()).value == 1.0
    assert metric(other, cache=tmp_path).score(ctx()).value == 0.0
    assert (first.calls, other.calls) == (1, 1)


def test_judges_with_equal_settings_share_answers(tmp_path):
    first, same = TunableJudge(temperature=0.5), TunableJudge(temperature=0.5)
    metric(first, cache=tmp_path).score(ctx())
    metric(same, cache=tmp_path).score(ctx())
    assert (first.calls, same.calls) == (1, 0)


def test_unparseable_answer_is_not_cached_and_is_asked_again(tmp_path):
    judge = Scripted("I would rather not say.", "score: 1")
    assert math.isnan(metric(judge.model, cache=tmp_path).score(ctx()).value)
    assert metric(judge.model, cache=tmp_path).score(ctx()).value == 1.0
    assert metric(judge.model, cache=tmp_path).score(ctx()).value == 1.0
    assert judge.calls == 2  # the third answer came from the cache


def test_failed_judge_call_is_not_cached_and_is_asked_again(tmp_path):
    judge = Scripted(PermissionError("bad key"), "score: 1")
    assert metric(judge.model, cache=tmp_path).score(ctx()).failed
    assert metric(judge.model, cache=tmp_path).score(ctx()).value == 1.0
    assert judge.calls == 2


@pytest.mark.parametrize(
    "damage",
    [
        lambda record: {**record, "text": 5},
        lambda record: {**record, "parsed": "not a dict"},
        lambda record: {k: v for k, v in record.items() if k != "text"},
        lambda record: {**record, "text": "no rating in here", "parsed": None},
        lambda record: [record],
    ],
    ids=["text_not_a_string", "parsed_not_a_dict", "text_missing", "unparseable_text", "not_an_object"],
)
def test_cache_record_of_the_wrong_shape_is_asked_again_not_a_permanent_nan(tmp_path, damage):
    judge = Scripted("score: 1")
    metric(judge.model, cache=tmp_path).score(ctx())
    (path,) = tmp_path.rglob("*.json")
    path.write_text(json.dumps(damage(json.loads(path.read_text()))))
    again = metric(judge.model, cache=tmp_path).score(ctx())
    assert again.value == 1.0 and not again.failed and judge.calls == 2
    assert json.loads(path.read_text())["text"] == "score: 1"  # the record is mended


def test_default_cache_directory_follows_levelfield_cache_dir(tmp_path):
    metric(Scripted("score: 1").model).score(ctx())
    assert JudgeCache().directory == tmp_path / "cache" / "judge"
    assert len(list((tmp_path / "cache" / "judge").rglob("*.json"))) == 1


# --- judge resolution --------------------------------------------------------------------------


def test_judged_metric_without_a_judge_says_how_to_give_one():
    # Built without a judge it waits for the run's (evaluate(..., judge=...)); used without one it says how to give one.
    metric = lf.metrics.judged.response_follows_trajectory()
    with pytest.raises(lf.MetricError, match=r"no judge: pass judge=.*'provider:model'"):
        metric.score(ctx())
    with pytest.raises(lf.MetricError, match=r"no judge: pass judge=.*'provider:model'"):
        lf.evaluate([{"prompt": "hi"}], lambda p: "ok", [metric], progress=False)


def test_unknown_provider_string_is_a_clear_error():
    with pytest.raises(lf.MetricError, match=r"judge 'nope:model' could not be resolved.*'provider:model'"):
        Judge("nope:model")


def test_provider_whose_package_is_missing_names_the_package():
    pytest.importorskip("langchain")
    if __import__("importlib").util.find_spec("langchain_openai") is not None:
        pytest.skip("langchain-openai is installed here")
    with pytest.raises(lf.MetricError, match="langchain-openai"):
        Judge("openai:gpt-4o")


def test_judge_of_the_wrong_type_is_rejected():
    with pytest.raises(lf.MetricError, match="chat model, a function, an agent or a 'provider:model' string, got int"):
        metric(42)


def test_judged_metric_names_say_how_to_build_them_once_the_judge_is_imported():
    with pytest.raises(lf.MetricError, match=r"lf\.metrics\.judged\.tool_use_quality\(judge=\.\.\.\)"):
        lf.metrics.resolve_metrics(["tool_use_quality"])


def test_import_levelfield_does_not_import_langchain():
    code = "import sys, levelfield as lf; lf.metrics.judged; lf.metrics.PointwiseMetric; print(sorted(m for m in sys.modules if m.startswith('langchain')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# --- through evaluate ----------------------------------------------------------------------------


def follows_policy(prompt: str) -> str:
    """Rates 1 when the response mentions the object of the last tool call (a crude but deterministic judge)."""
    calls = json.loads(prompt.split("## predicted_trajectory\n", 1)[1].split("\n\n## response", 1)[0])
    response = prompt.split("## response\n", 1)[1].split("\n\n# Your answer", 1)[0]
    if not calls:
        return '{"explanation": "no tool calls", "score": "0"}'
    target = json.dumps(calls[-1]["tool_input"])
    mentioned = any(str(v) in response for v in calls[-1]["tool_input"].values() if isinstance(v, str))
    return json.dumps({"explanation": f"last call {target}", "score": "1" if mentioned else "0"})


def test_evaluate_scores_judged_metrics_on_the_home_automation_sample():
    judge = Scripted(follows_policy)
    custom = lf.metrics.PointwiseMetric("response_follows_trajectory_custom", FOLLOWS, judge.model)
    prebuilt = lf.metrics.judged.response_follows_trajectory(judge=judge.model)
    result = lf.evaluate(DATASET, careful_agent, metrics=[custom, prebuilt, "trajectory_exact_match"], progress=False)
    table = result.metrics_table
    assert len(table) == 18
    for name in ("response_follows_trajectory_custom", "response_follows_trajectory"):
        assert table[f"{name}/score"].notna().all()
        assert table[f"{name}/explanation"].str.match("last call|no tool calls").all()
        assert (table[f"{name}/judge_calls"] == 1).all()
    by_case = table.set_index("case_id")["response_follows_trajectory/score"]
    assert by_case["greeting"] == 0.0 and by_case["turn_off_device_2"] == 1.0
    assert judge.calls == 36


def test_judge_tokens_are_kept_apart_from_agent_tokens():
    def agent(prompt: str) -> lf.AgentOutput:
        return lf.AgentOutput(response="done", usage=lf.Usage(input_tokens=100, output_tokens=5, total_tokens=105))

    judge = Scripted("score: 1")
    m = metric(judge.model, "Was {prompt} done? {response}")
    result = lf.evaluate([{"prompt": "do it"}, {"prompt": "do that"}], agent, metrics=[m], progress=False)
    table = result.metrics_table
    prompt_tokens = count_tokens(judge.prompts[0])
    assert list(table["total_tokens"]) == [105, 105]
    assert list(table["follows/total_tokens"]) == [prompt_tokens + 2] * 2
    summary = result.summary_metrics
    assert summary["total_tokens/sum"] == 210
    assert summary["follows/total_tokens/sum"] == 2 * (prompt_tokens + 2)
    assert summary["follows/judge_calls/sum"] == 2


def test_malformed_answers_count_as_judge_failures_in_the_summary():
    judge = Scripted(lambda p: "score: 1" if "first" in p else "hmm, hard to say")
    result = lf.evaluate(
        [{"prompt": "first"}, {"prompt": "second"}], lambda p: "ok", metrics=[metric(judge.model, "{prompt}: {response}")], progress=False
    )
    table, summary = result.metrics_table, result.summary_metrics
    assert table["follows/score"].iloc[0] == 1.0 and math.isnan(table["follows/score"].iloc[1])
    assert table["follows/unreadable_answer"].iloc[1] == "hmm, hard to say"
    assert "could not be read" in table["follows/error"].iloc[1]
    assert summary["follows/failure_count"] == 1 and summary["follows/nan_count"] == 1


def test_rerun_of_an_evaluation_pays_the_judge_nothing(tmp_path):
    judge = Scripted(follows_policy)
    rows = [{"prompt": "Turn on device_1 in the Living Room."}, {"prompt": "Turn off device_2 in the Bedroom."}]
    first = lf.evaluate(rows, careful_agent, metrics=[metric(judge.model, cache=tmp_path)], progress=False)
    again = lf.evaluate(rows, careful_agent, metrics=[metric(judge.model, cache=tmp_path)], progress=False)
    assert judge.calls == 2
    assert list(again.metrics_table["follows/score"]) == list(first.metrics_table["follows/score"])
    assert again.summary_metrics["follows/total_tokens/sum"] == 0
    assert again.summary_metrics["follows/judge_calls/sum"] == 0


def test_row_missing_a_template_field_gets_nan_not_a_judge_call():
    judge = Scripted("score: 5")
    m = lf.metrics.judged.final_response_quality(judge.model, judge_config=lf.JudgeConfig(structured_output=False))
    result = lf.evaluate([{"prompt": "hi", "reference": "hello"}, {"prompt": "bye"}], lambda p: "hello", metrics=[m], progress=False)
    scores = list(result.metrics_table["final_response_quality/score"])
    assert scores[0] == 5.0 and math.isnan(scores[1]) and judge.calls == 1


# --- prebuilt metrics --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("factory", "ratings", "shown"),
    [
        ("response_follows_trajectory", ["1", "0"], ["prompt", "predicted_trajectory", "response"]),
        ("tool_use_quality", ["5", "4", "3", "2", "1"], ["prompt", "predicted_trajectory", "response"]),
        ("final_response_quality", ["5", "4", "3", "2", "1"], ["prompt", "reference", "response"]),
        ("safety", ["1", "0"], ["prompt", "predicted_trajectory", "response"]),
    ],
)
def test_prebuilt_metrics_have_their_name_rubric_and_inputs(factory, ratings, shown):
    m = getattr(lf.metrics.judged, factory)(Scripted("score: 1").model)
    assert m.name == factory
    assert list(m.metric_prompt_template.rating_rubric) == ratings
    assert m.metric_prompt_template.input_variables == shown


# --- pairwise ----------------------------------------------------------------------------------


def prefers_more_calls(prompt: str) -> str:
    """Picks the agent (as shown) whose trajectory has more tool calls; tie when equal."""
    sides = prompt.split("# Agent A\n", 1)[1].split("# Agent B\n", 1)
    counts = [s.count('"tool_name"') for s in sides]
    winner = "A" if counts[0] > counts[1] else "B" if counts[1] > counts[0] else "tie"
    return json.dumps({"explanation": f"calls {counts}", "winner": winner})


def pairwise(judge: Any, **options: Any) -> lf.metrics.PairwiseMetric:
    how = {"structured_output": False, **{k: options.pop(k) for k in list(options) if k in JUDGE_FIELDS}}
    return lf.metrics.PairwiseMetric("preference", judge=judge, judge_config=lf.JudgeConfig(**how), **options)


def test_pairwise_score_is_from_agent_a_point_of_view_whatever_the_order_shown():
    judge = Scripted(prefers_more_calls)
    m = pairwise(judge.model)
    a = ctx(predicted_trajectory=[lf.ToolCall(tool_name="x"), lf.ToolCall(tool_name="y")])
    b = ctx(predicted_trajectory=[lf.ToolCall(tool_name="x")])
    keys = [f"case{i}" for i in range(12)]
    orders = {m.swapped(k) for k in keys}
    assert orders == {True, False}  # both orders occur among these keys
    assert {m.score_pair(a, b, key=k).value for k in keys} == {1.0}
    assert {m.score_pair(b, a, key=k).value for k in keys} == {0.0}


def test_pairwise_position_is_reproducible_for_a_seed_and_changes_with_it():
    keys = [f"case{i}" for i in range(40)]
    m0, again, m1 = (pairwise(Scripted("A").model, seed=s) for s in (0, 0, 1))
    assert [m0.swapped(k) for k in keys] == [again.swapped(k) for k in keys]
    assert [m0.swapped(k) for k in keys] != [m1.swapped(k) for k in keys]
    assert 10 <= sum(m0.swapped(k) for k in keys) <= 30


def test_pairwise_one_order_per_sample_alternates_when_asked():
    judge = Scripted("Winner: A")  # a judge that always prefers whoever is shown first
    score = pairwise(judge.model, samples=2, both_orders=False).score_pair(ctx(), ctx(response="other"))
    assert score.value == 0.5 and score.extra["agreement"] == 0.5 and judge.calls == 2
    assert judge.prompts[0] != judge.prompts[1]
    assert "position_bias" not in score.extra
    one = Scripted("Winner: A")
    pairwise(one.model, both_orders=False).score_pair(ctx(), ctx(response="other"))
    assert one.calls == 1


def prefers_the_sun(prompt: str) -> str:
    """Picks the agent (as shown) whose answer mentions the sun (晴れ); tie when both or neither do."""
    sides = prompt.split("# Agent A\n", 1)[1].split("# Agent B\n", 1)
    sunny = ["晴れ" in side for side in sides]
    winner = "tie" if sunny[0] == sunny[1] else "A" if sunny[0] else "B"
    return json.dumps({"explanation": "晴れと言っている", "winner": winner}, ensure_ascii=False)


def test_pairwise_judges_both_orders_by_default_and_keeps_a_consistent_verdict():
    judge = Scripted(prefers_the_sun)
    score = pairwise(judge.model).score_pair(ctx(response="東京は晴れです。"), ctx(response="わかりません。"))
    assert judge.calls == 2
    firsts = [p.split("# Agent A\n", 1)[1].split("# Agent B\n", 1)[0] for p in judge.prompts]
    assert sorted("晴れ" in f for f in firsts) == [False, True]  # each answer shown first once
    assert score.value == 1.0 and score.extra["position_bias"] is False
    assert score.extra["orders"] == {"a_first": "A", "b_first": "A"}


def test_a_position_biased_verdict_is_a_tie_reported_per_row_and_counted_in_the_summary():
    judge = Scripted("Winner: A")  # prefers whoever is shown first, whatever they said
    m = pairwise(judge.model)
    score = m.score_pair(ctx(response="東京は晴れです。"), ctx(response="わかりません。"))
    assert score.value == 0.5 and score.extra["position_bias"] is True
    assert score.extra["orders"] == {"a_first": "A", "b_first": "B"}
    assert score.explanation.startswith("position bias: the judge preferred A with agent A shown first and B with agent B")
    careful = lf.evaluate(DATASET, careful_agent, metrics=["trajectory_exact_match"], progress=False)
    hasty = lf.evaluate(DATASET, hasty_agent, metrics=["trajectory_exact_match"], progress=False)
    table = m.compare_results(careful, hasty)
    summary = m.summarize(table)
    assert table["preference/position_bias"].tolist() == [True] * 18
    assert summary["preference/position_bias_count"] == 18 and summary["preference/position_bias_rate"] == 1.0
    assert summary["preference/tie_rate"] == 1.0


def test_an_order_the_judge_did_not_answer_readably_leaves_position_bias_unknown():
    judge = Scripted(lambda p: "Winner: A" if "東京は晴れ" in p.split("# Agent B")[0] else "hmm, both fine?")
    score = pairwise(judge.model).score_pair(ctx(response="東京は晴れです。"), ctx(response="わかりません。"))
    assert score.extra["position_bias"] is None and score.value == 1.0
    assert score.extra["orders"] == {"a_first": "A", "b_first": None}


def test_pairwise_failed_run_is_nan_without_asking_the_judge():
    judge = Scripted("Winner: A")
    score = pairwise(judge.model).score_pair(ctx(failure=True), ctx())
    assert math.isnan(score.value) and not score.failed and judge.calls == 0


def test_pairwise_compares_two_eval_results_of_one_dataset():
    careful = lf.evaluate(DATASET, careful_agent, metrics=["trajectory_exact_match"], progress=False)
    hasty = lf.evaluate(DATASET, hasty_agent, metrics=["trajectory_exact_match"], progress=False)
    m = pairwise(Scripted(prefers_more_calls).model)
    table = m.compare_results(careful, hasty)
    assert list(table["case_id"]) == [r.case_id for r in careful.runs]
    summary = m.summarize(table)
    assert summary["row_count"] == 18 and summary["preference/failure_count"] == 0
    assert summary["preference/a_win_rate"] > summary["preference/b_win_rate"]
    assert table["preference/swapped"].nunique() == 2


def test_pairwise_refuses_results_of_different_cases():
    a = lf.evaluate([{"case_id": "x", "prompt": "p"}], lambda p: "ok", metrics=["exact_match"], progress=False)
    b = lf.evaluate([{"case_id": "y", "prompt": "p"}], lambda p: "ok", metrics=["exact_match"], progress=False)
    with pytest.raises(lf.MetricError, match="only in A: \\[\\('x', 0\\)\\]"):
        pairwise(Scripted("A").model).compare_results(a, b)


def test_pairwise_metric_is_not_accepted_as_a_per_row_metric():
    with pytest.raises(lf.MetricError):
        lf.evaluate([{"prompt": "p"}], lambda p: "ok", metrics=[pairwise(Scripted("A").model)], progress=False)


def test_vertex_alias_resolves_through_init_chat_model_to_google_vertexai():
    pytest.importorskip("langchain")
    if __import__("importlib").util.find_spec("langchain_google_vertexai") is not None:
        pytest.skip("langchain-google-vertexai is installed here")
    with pytest.raises(lf.MetricError, match="google_vertexai:gemini-2.5-flash.*langchain-google-vertexai"):
        Judge("vertex:gemini-2.5-flash")


def test_template_placeholder_missing_in_evaluate_is_recorded_per_row_not_raised():
    judge = Scripted("score: 1")
    m = metric(judge.model, "Judge {response} given {user_mood}")
    table = lf.evaluate([{"prompt": "p"}], lambda p: "ok", metrics=[m], progress=False).metrics_table
    assert math.isnan(table["follows/score"].iloc[0]) and judge.calls == 0
    assert "{user_mood}" in table["follows/error"].iloc[0]


def test_the_same_question_in_one_run_is_asked_once():
    judge = Scripted("score: 1")
    result = lf.evaluate([{"prompt": "p"}], lambda p: "ok", metrics=[metric(judge.model, "{prompt}: {response}")], trials=3, progress=False)
    table = result.metrics_table
    assert judge.calls == 1
    assert list(table["follows/score"]) == [1.0] * 3
    assert sorted(table["follows/judge_calls"]) == [0, 0, 1]


def test_judged_metric_named_as_a_string_says_to_build_it_with_a_judge():
    with pytest.raises(lf.MetricError, match=r"lf\.metrics\.judged\.safety\(judge=\.\.\.\)"):
        lf.evaluate([{"prompt": "p"}], lambda p: "ok", metrics=["safety"], progress=False)
