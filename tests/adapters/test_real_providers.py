"""The real provider clients, against local stand-ins speaking their wire formats: usage as the bill counts it.

``langchain_openai.ChatOpenAI``, ``langchain_anthropic.ChatAnthropic`` and
``langchain_google_genai.ChatGoogleGenerativeAI`` drive ``langchain.agents.create_agent`` graphs with
a tool; google-adk's ``Gemini`` drives an ADK agent through Agent Engine's ``AdkApp``. Each client
talks HTTP to a stand-in on 127.0.0.1 (``tests/provider_standins.py``) that reports prompt-cache
reads and writes and reasoning tokens in the provider's own terms. The oracle is genai-prices read
straight from those response bodies (``genai_prices.extract_usage``, its own parser of each
provider's usage): levelfield's ``cost_usd`` must be that price, and every token kind what the
provider said (a differential test).
"""

from __future__ import annotations

import json
import math

import pytest

genai_prices = pytest.importorskip("genai_prices")
pytest.importorskip("langchain.agents")

import levelfield as lf  # noqa: E402
from levelfield._core.data.types import AgentRun, Usage  # noqa: E402
from provider_standins import AnthropicStandIn, Bill, GeminiStandIn, OpenAIStandIn, Step  # noqa: E402

CALL = ("get_weather", {"city": "Lisboa"})
PROMPT = "Como está o tempo em Lisboa hoje?"
ANSWER = "Em Lisboa está sol, com 23 °C — um ótimo dia para passear à beira do Tejo."
REFERENCE = [{"tool_name": CALL[0], "tool_input": CALL[1]}]


def get_weather(city: str) -> str:
    """The weather in a city now."""
    return {"Lisboa": "sol, 23 °C", "東京": "晴れ、18 °C", "München": "bewölkt, 12 °C"}.get(city, "unknown")


def script(cache_write: int = 0) -> list[Step]:
    """A tool call then the answer; the second call reads most of its prompt from the cache."""
    return [
        Step(Bill(prompt=1200, completion=80, cache_read=1000, cache_write=cache_write, reasoning=64), calls=(CALL,)),
        Step(Bill(prompt=1350, completion=120, cache_read=1152, reasoning=32), text=ANSWER),
    ]


def oracle_price(answers: list[dict], provider: str, **flavor: str) -> float:
    """genai-prices' price of what the stand-in reported, read by genai-prices' own extractor."""
    return sum(float(genai_prices.extract_usage(a, provider_id=provider, **flavor).calc_price().total_price)
               for a in answers)


def oracle_usage(answers: list[dict], provider: str, **flavor: str):
    """genai-prices' reading of the token kinds the stand-in reported, summed over the calls."""
    found = [genai_prices.extract_usage(a, provider_id=provider, **flavor).usage for a in answers]
    return sum(found[1:], found[0])


def evaluate(agent) -> lf.EvalResult:
    dataset = [{"prompt": PROMPT, "reference_trajectory": REFERENCE, "reference": ANSWER}]
    return lf.evaluate(dataset, agent=agent, metrics=["trajectory_exact_match", "exact_match"])


def check(result: lf.EvalResult, answers: list[dict], provider: str, model: str, *,
          cache_write: bool, **flavor: str) -> Usage:
    """The run's trajectory, answer, model, every token kind and cost are what the provider said."""
    run: AgentRun = result.runs[0]
    assert not run.failure, run.error
    assert len(answers) == 2  # the tool call, then the answer
    assert [(c.tool_name, c.tool_input) for c in run.output.trajectory] == [CALL]
    assert run.output.trajectory[0].tool_output == "sol, 23 °C"
    assert run.output.response == ANSWER
    assert result.summary_metrics["trajectory_exact_match/mean"] == 1.0
    assert result.summary_metrics["exact_match/mean"] == 1.0

    usage = run.output.usage
    expected = oracle_usage(answers, provider, **flavor)
    assert usage.model == model
    assert usage.input_tokens == expected.input_tokens == 1200 + 1350
    assert usage.cache_read_tokens == expected.cache_read_tokens == 1000 + 1152
    assert usage.cache_write_tokens == (expected.cache_write_tokens if cache_write else None)
    assert usage.output_tokens == expected.output_tokens == 80 + 120
    assert usage.reasoning_tokens == expected.output_reasoning_tokens == 64 + 32
    assert usage.total_tokens == 1200 + 1350 + 80 + 120

    price = oracle_price(answers, provider, **flavor)
    table = result.metrics_table
    assert table["cost_usd"].iloc[0] == pytest.approx(price, rel=1e-12)
    assert result.summary_metrics["cost_usd/sum"] == pytest.approx(price, rel=1e-12)
    # Priced as if nothing were cached, it would cost more: the bug this pins.
    full = sum(float(genai_prices.calc_price(genai_prices.Usage(input_tokens=b.bill.prompt,
                                                                  output_tokens=b.bill.completion), model).total_price)
               for b in script())
    assert price < full
    assert table["cache_read_tokens"].iloc[0] == 2152
    assert table["reasoning_tokens"].iloc[0] == 96
    assert result.summary_metrics["cache_read_tokens/mean"] == 2152
    assert result.summary_metrics["cache_share"] == pytest.approx(2152 / 2550)
    return usage


# -- OpenAI ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("streaming", [False, True], ids=["json", "sse"])
def test_openai_chat_completions_usage_is_priced_as_billed(streaming):
    langchain_openai = pytest.importorskip("langchain_openai")
    from langchain.agents import create_agent

    model = "gpt-5-mini-2025-08-07"
    with OpenAIStandIn(model=model, script=script()) as provider:
        chat = langchain_openai.ChatOpenAI(model="gpt-5-mini", base_url=f"{provider.url}/v1", api_key="sk-test",
                                           streaming=streaming, stream_usage=True, max_retries=0, timeout=20)
        graph = create_agent(chat, tools=[get_weather], system_prompt="Responda em português.")
        result = evaluate(graph)
    assert not provider.unknown_paths
    assert provider.streamed == [streaming, streaming]
    # The tool's answer went back to the model as a tool message.
    assert provider.requests[1]["messages"][-1] == {
        "role": "tool", "content": "sol, 23 °C", "tool_call_id": provider.answers[0]["choices"][0]["message"]["tool_calls"][0]["id"]}
    check(result, provider.answers, "openai", model, cache_write=False, api_flavor="chat")


# -- Anthropic -------------------------------------------------------------------------------------


@pytest.mark.parametrize("streaming", [False, True], ids=["json", "sse"])
def test_anthropic_messages_usage_adds_cache_reads_and_writes_back_into_the_prompt(streaming):
    langchain_anthropic = pytest.importorskip("langchain_anthropic")
    from langchain.agents import create_agent

    model = "claude-sonnet-4-6"
    with AnthropicStandIn(model=model, script=script(cache_write=150)) as provider:
        chat = langchain_anthropic.ChatAnthropic(model="claude-sonnet-4-6", base_url=provider.url, api_key="sk-ant-test",
                                                 streaming=streaming, max_retries=0, timeout=20)
        graph = create_agent(chat, tools=[get_weather], system_prompt="Responda em português.")
        result = evaluate(graph)
    assert not provider.unknown_paths
    assert provider.streamed == [streaming, streaming]
    # Anthropic's own input_tokens left the cache out; levelfield's counts every prompt token.
    assert provider.answers[0]["usage"]["input_tokens"] == 1200 - 1000 - 150
    usage = check(result, provider.answers, "anthropic", model, cache_write=True)
    assert usage.cache_write_tokens == 150


# -- Gemini (LangChain) ----------------------------------------------------------------------------

_GOOGLE_ENV = ("GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_ENTERPRISE", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION",
               "GOOGLE_CLOUD_AGENT_ENGINE_LOCATION", "ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS")


@pytest.fixture
def gemini_api_env():
    """The Gemini API, not Vertex: AdkApp sets Vertex's variables process-wide when it runs (and an
    earlier test may have run one); they are cleared here and put back as they were after the test."""
    import os

    before = {k: os.environ.get(k) for k in _GOOGLE_ENV}
    for key in _GOOGLE_ENV:
        os.environ.pop(key, None)
    yield
    for key, value in before.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value



@pytest.mark.parametrize("streaming", [False, True], ids=["json", "sse"])
def test_gemini_generate_content_usage_adds_thoughts_to_the_output(streaming, gemini_api_env):
    langchain_google_genai = pytest.importorskip("langchain_google_genai")
    from langchain.agents import create_agent

    model = "gemini-2.5-flash"
    with GeminiStandIn(model=model, script=script()) as provider:
        chat = langchain_google_genai.ChatGoogleGenerativeAI(model=model, base_url=provider.url, api_key="test-key",
                                                             streaming=streaming, max_retries=0, timeout=20)
        graph = create_agent(chat, tools=[get_weather], system_prompt="Responda em português.")
        result = evaluate(graph)
    assert not provider.unknown_paths
    assert provider.streamed == [streaming, streaming]
    # Gemini's candidates count left the thoughts out; levelfield's output counts them.
    assert provider.answers[0]["usageMetadata"]["candidatesTokenCount"] == 80 - 64
    check(result, provider.answers, "google", model, cache_write=False)


# -- Gemini (google-adk, through Agent Engine's AdkApp) -------------------------------------------


def test_adk_gemini_through_adk_app_reads_cached_and_thought_tokens(gemini_api_env):
    pytest.importorskip("google.adk")
    pytest.importorskip("vertexai.agent_engines")
    from google.adk.agents import LlmAgent
    from google.adk.models.google_llm import Gemini
    from vertexai import agent_engines

    from levelfield.adapters import AgentEngineAgent
    from samples.home_automation.agents import agent_engine_agent as sample

    model = "gemini-2.5-flash"
    with GeminiStandIn(model=model, script=script()) as provider:
        sample.init_vertex()
        gemini = Gemini(model=model, base_url=provider.url, client_kwargs={"api_key": "test-key", "vertexai": False})
        root = LlmAgent(name="tempo", model=gemini, tools=[get_weather], instruction="Responda em português.")
        result = evaluate(AgentEngineAgent(agent_engines.AdkApp(agent=root)))
    assert not provider.unknown_paths
    check(result, provider.answers, "google", model, cache_write=False)


def test_an_adk_agent_passed_as_it_is_reads_cached_and_thought_tokens_and_is_priced_as_billed(gemini_api_env):
    """The ADK agent itself, no AdkApp and no vertexai.init: ADK's own Runner drives the real Gemini client."""
    pytest.importorskip("google.adk")
    from google.adk.agents import LlmAgent
    from google.adk.models.google_llm import Gemini

    model = "gemini-2.5-flash"
    with GeminiStandIn(model=model, script=script()) as provider:
        gemini = Gemini(model=model, base_url=provider.url, client_kwargs={"api_key": "test-key", "vertexai": False})
        root = LlmAgent(name="tempo", model=gemini, tools=[get_weather], instruction="Responda em português.")
        result = evaluate(root)
    assert not provider.unknown_paths
    assert result.runs[0].output.trajectory[0].agent == "tempo"
    check(result, provider.answers, "google", model, cache_write=False)


# -- function agents, traces, records, price tables -------------------------------------------------


def test_a_function_agents_usage_dict_with_cache_tokens_is_priced_by_genai_prices():
    def agent(prompt: str) -> dict:
        return {"response": "東京は晴れ、18 °Cです。", "predicted_trajectory": [{"tool_name": "get_weather", "tool_input": {"city": "東京"}}],
                "usage": {"input_tokens": 1200, "cache_read_tokens": 1000, "cache_write_tokens": 100, "output_tokens": 300,
                          "reasoning_tokens": 64, "model": "claude-sonnet-4-6"}}

    result = lf.evaluate([{"prompt": "東京の天気は?"}], agent=agent, metrics=[])
    expected = genai_prices.calc_price(genai_prices.Usage(input_tokens=1200, cache_read_tokens=1000, cache_write_tokens=100,
                                                          output_tokens=300, output_reasoning_tokens=64), "claude-sonnet-4-6")
    assert result.metrics_table["cost_usd"].iloc[0] == pytest.approx(float(expected.total_price), rel=1e-12)
    assert result.runs[0].output.usage.cache_write_tokens == 100


def test_a_function_agents_usage_counting_cache_reads_outside_the_prompt_is_refused_with_the_meaning():
    def agent(prompt: str) -> dict:  # Anthropic's raw counts: input_tokens without the cache
        return {"response": "Es ist bewölkt.", "usage": {"input_tokens": 200, "cache_read_tokens": 1000, "output_tokens": 9,
                                                         "model": "claude-sonnet-4-6"}}

    result = lf.evaluate([{"prompt": "Wie ist das Wetter in München?"}], agent=agent, metrics=[])
    run = result.runs[0]
    assert run.failure
    assert "input_tokens counts every prompt token, cached ones included" in run.error


def test_otlp_spans_with_the_genai_cache_and_reasoning_attributes_give_the_billed_usage():
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("t")
    answer = "慕尼黑今天多云，12 °C。"
    with tracer.start_as_current_span("invoke_agent weather") as agent:
        agent.set_attribute("gen_ai.operation.name", "invoke_agent")
        agent.set_attribute("gen_ai.agent.name", "weather")
        agent.set_attribute("gen_ai.input.messages", json.dumps([{"role": "user", "parts": [{"type": "text", "content": "慕尼黑天气?"}]}], ensure_ascii=False))
        for bill in (Bill(1200, 80, cache_read=1000, cache_write=100, reasoning=64), Bill(1350, 120, cache_read=1152, reasoning=32)):
            with tracer.start_as_current_span("chat claude-sonnet-4-6") as chat:
                chat.set_attribute("gen_ai.operation.name", "chat")
                chat.set_attribute("gen_ai.response.model", "claude-sonnet-4-6")
                chat.set_attribute("gen_ai.usage.input_tokens", bill.prompt)
                chat.set_attribute("gen_ai.usage.output_tokens", bill.completion)
                chat.set_attribute("gen_ai.usage.cache_read.input_tokens", bill.cache_read)
                chat.set_attribute("gen_ai.usage.cache_creation.input_tokens", bill.cache_write)
                chat.set_attribute("gen_ai.usage.reasoning.output_tokens", bill.reasoning)
        agent.set_attribute("gen_ai.output.messages", json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": answer}]}], ensure_ascii=False))
    case = lf.load_traces(exporter.get_finished_spans())[0]
    assert case.response == answer
    assert case.metadata["usage"] == {"input_tokens": 2550, "output_tokens": 200, "total_tokens": 2750,
                                      "cache_read_tokens": 2152, "cache_write_tokens": 100, "reasoning_tokens": 96,
                                      "model": "claude-sonnet-4-6"}
    result = lf.evaluate(lf.load_traces(exporter.get_finished_spans()), metrics=[])
    expected = genai_prices.calc_price(genai_prices.Usage(input_tokens=2550, cache_read_tokens=2152, cache_write_tokens=100,
                                                          output_tokens=200, output_reasoning_tokens=96), "claude-sonnet-4-6")
    assert result.metrics_table["cost_usd"].iloc[0] == pytest.approx(float(expected.total_price), rel=1e-12)


def test_a_record_written_before_cache_tokens_loads_and_is_priced_at_the_full_input_rate():
    old = {"input_tokens": 1200, "output_tokens": 300, "total_tokens": 1500, "model": "gpt-4o-mini"}
    usage = Usage.model_validate(old)
    assert (usage.cache_read_tokens, usage.cache_write_tokens, usage.reasoning_tokens) == (None, None, None)
    assert usage.cache_share is None
    assert usage.model_dump(exclude_none=True) == old  # and writes the same line back
    from levelfield._core.data.prices import usage_cost

    expected = genai_prices.calc_price(genai_prices.Usage(input_tokens=1200, output_tokens=300), "gpt-4o-mini")
    assert usage_cost(usage, {}).usd == pytest.approx(float(expected.total_price), rel=1e-12)


def test_an_old_journal_without_cache_fields_loads_and_its_summary_has_no_cache_columns(tmp_path):
    result = lf.evaluate([{"prompt": "Olá"}], agent=lambda p: {"response": "Olá!", "usage": {"input_tokens": 5, "output_tokens": 2}},
                         metrics=[], out=tmp_path / "run")
    loaded = lf.EvalResult.load(tmp_path / "run")
    assert loaded.runs[0].output.usage.cache_read_tokens is None
    assert "cache_share" not in loaded.summary_metrics
    assert "cache_read_tokens" not in result.metrics_table


def test_a_price_table_prices_cache_reads_writes_and_reasoning_at_their_own_rates():
    from levelfield._core.data.prices import price_table, usage_cost

    table = price_table({"house-model": {"input_per_mtok": 2.0, "output_per_mtok": 8.0, "cache_read_per_mtok": 0.5,
                                         "cache_write_per_mtok": 2.5, "reasoning_per_mtok": 10.0}})
    usage = Usage(input_tokens=1200, cache_read_tokens=1000, cache_write_tokens=100, output_tokens=300,
                  reasoning_tokens=64, model="house-model")
    assert usage_cost(usage, table).usd == pytest.approx((100 * 2.0 + 1000 * 0.5 + 100 * 2.5 + 236 * 8.0 + 64 * 10.0) / 1e6)
    plain = price_table({"house-model": {"input_per_mtok": 2.0, "output_per_mtok": 8.0}})
    assert usage_cost(usage, plain).usd == pytest.approx((1200 * 2.0 + 300 * 8.0) / 1e6)


def test_usage_sums_keep_each_models_cache_share_and_unreported_parts_stay_none():
    a = Usage(input_tokens=1200, output_tokens=80, cache_read_tokens=1000, model="gpt-5-mini")
    b = Usage(input_tokens=500, output_tokens=40, model="gemini-2.5-flash")
    total = a + b
    assert total.cache_read_tokens == 1000 and total.reasoning_tokens is None
    assert total.by_model["gpt-5-mini"].cache_read_tokens == 1000
    assert total.by_model["gemini-2.5-flash"].cache_read_tokens is None
    assert math.isclose(a.cache_share, 1000 / 1200)


# -- the judge and the simulated user are priced the same way ----------------------------------------


def test_a_judge_on_the_real_openai_client_is_priced_with_its_cache_and_reasoning_tokens():
    langchain_openai = pytest.importorskip("langchain_openai")
    model = "gpt-5-mini-2025-08-07"
    with OpenAIStandIn(model=model, script=[Step(Bill(900, 40, cache_read=768, reasoning=24), text="score: 1")]) as provider:
        judge = langchain_openai.ChatOpenAI(model="gpt-5-mini", base_url=f"{provider.url}/v1", api_key="sk-test",
                                            max_retries=0, timeout=20)
        template = lf.metrics.PointwiseMetricPromptTemplate(
            criteria={"Hilfreich": "Ist die Antwort hilfreich?"}, rating_rubric={"1": "ja", "0": "nein"},
            input_variables=["prompt"])
        metric = lf.metrics.PointwiseMetric("hilfreich", template, judge, judge_config=lf.JudgeConfig(structured_output=False, cache=False))
        result = lf.evaluate([{"prompt": "Wie spät ist es in München?"}], agent=lambda p: "Es ist 12 Uhr.", metrics=[metric])
    assert len(provider.answers) == 1
    assert result.metrics_table["hilfreich/score"].iloc[0] == 1
    assert result.metrics_table["hilfreich/cost_usd"].iloc[0] == pytest.approx(
        oracle_price(provider.answers, "openai", api_flavor="chat"), rel=1e-12)


def test_a_simulated_user_on_the_real_anthropic_client_is_priced_with_its_cache_tokens():
    langchain_anthropic = pytest.importorskip("langchain_anthropic")
    model = "claude-haiku-4-5"
    with AnthropicStandIn(model=model, script=[Step(Bill(700, 12, cache_read=512, cache_write=64), text="</finished>")]) as provider:
        user = lf.UserSimulator(langchain_anthropic.ChatAnthropic(model=model, base_url=provider.url, api_key="sk-ant-test",
                                                                  max_retries=0, timeout=20), max_turns=3)
        rows = [{"case_id": "s", "scenario": {"starting_prompt": "我需要一个去里斯本的航班。", "conversation_plan": "Voo para Lisboa."}}]
        result = lf.evaluate(rows, agent=lambda p: "Reservado: voo para Lisboa às 9h.", metrics=[], simulator=user)
    assert len(provider.answers) == 1
    simulator = result.runs[0].conversation.simulator_usage
    assert (simulator.input_tokens, simulator.cache_read_tokens, simulator.cache_write_tokens) == (700, 512, 64)
    assert result.metrics_table["simulator_cost_usd"].iloc[0] == pytest.approx(
        oracle_price(provider.answers, "anthropic"), rel=1e-12)


def test_a_comparison_shows_each_agents_cache_share_where_it_is_known():
    def cached(prompt: str) -> dict:
        return {"response": "ok", "usage": {"input_tokens": 1000, "cache_read_tokens": 750, "output_tokens": 10,
                                            "model": "gpt-5-mini"}}

    def uncached(prompt: str) -> dict:
        return {"response": "ok", "usage": {"input_tokens": 1000, "output_tokens": 10, "model": "gpt-5-mini"}}

    rows = [{"case_id": f"c{i}", "prompt": f"Pergunta {i}", "reference": "ok"} for i in range(3)]
    cmp = lf.compare(rows, {"cached": cached, "uncached": uncached}, ["exact_match"])
    s = cmp.summary
    assert s.loc["cached", "cache_share"] == pytest.approx(0.75)
    assert s.loc["cached", "cache_read_tokens/mean"] == 750
    assert math.isnan(s.loc["uncached", "cache_share"])
    assert s.loc["cached", "cost_usd/mean"] < s.loc["uncached", "cost_usd/mean"]


def test_the_report_shows_the_share_of_the_prompt_read_from_cache(tmp_path):
    def cached(prompt: str) -> dict:
        return {"response": "ok", "usage": {"input_tokens": 1000, "cache_read_tokens": 750, "output_tokens": 10,
                                            "model": "gpt-5-mini"}}

    rows = [{"case_id": f"c{i}", "prompt": f"質問 {i}", "reference": "ok"} for i in range(3)]
    cmp = lf.compare(rows, {"cached": cached, "plain": lambda p: "ok"}, ["exact_match"])
    path = tmp_path / "report.html"
    lf.report.write(cmp, path)
    html = path.read_text(encoding="utf-8")
    assert "prompt read from cache</td><td class=num>75%</td><td class=num>-</td>" in html


# -- A2A: ADK's usage metadata, and levelfield's own server ----------------------------------------------


def test_a2a_usage_metadata_in_geminis_terms_gives_the_billed_usage():
    pytest.importorskip("a2a")
    from levelfield.adapters.a2a.events import USAGE_KEY, _usage_from

    meta = {USAGE_KEY: {"promptTokenCount": 1200, "cachedContentTokenCount": 1000, "candidatesTokenCount": 16,
                        "thoughtsTokenCount": 64, "totalTokenCount": 1280}, "model_version": "gemini-2.5-flash"}
    assert _usage_from(meta) == Usage(input_tokens=1200, cache_read_tokens=1000, output_tokens=80, reasoning_tokens=64,
                                      total_tokens=1280, model="gemini-2.5-flash")


def test_levelfields_a2a_server_passes_every_token_kind_to_the_client():
    pytest.importorskip("a2a.server.request_handlers")
    pytest.importorskip("uvicorn")
    from levelfield.adapters import A2AAgent
    from levelfield.adapters.a2a.server import start_server

    spent = Usage(input_tokens=1200, cache_read_tokens=1000, cache_write_tokens=100, output_tokens=300,
                  reasoning_tokens=64, total_tokens=1500, model="claude-sonnet-4-6")

    async def agent(prompt: str) -> lf.AgentOutput:
        return lf.AgentOutput(response="Está sol em Lisboa.", usage=spent)

    with start_server(agent) as server:
        out = lf.evaluate([{"prompt": "Tempo em Lisboa?"}], A2AAgent(server.url), metrics=[]).runs[0].output
    assert out.usage == spent


# -- every source's counts, one meaning ----------------------------------------------------------------

SAME_CALL = Usage(input_tokens=1200, cache_read_tokens=1000, output_tokens=300, reasoning_tokens=64, total_tokens=1500)


@pytest.mark.parametrize("raw", [
    {"prompt_tokens": 1200, "completion_tokens": 300, "total_tokens": 1500,
     "prompt_tokens_details": {"cached_tokens": 1000}, "completion_tokens_details": {"reasoning_tokens": 64}},
    {"input_tokens": 1200, "output_tokens": 300, "total_tokens": 1500,
     "input_tokens_details": {"cached_tokens": 1000}, "output_tokens_details": {"reasoning_tokens": 64}},
    {"input_tokens": 200, "cache_read_input_tokens": 1000, "cache_creation_input_tokens": 0, "output_tokens": 300,
     "output_tokens_details": {"thinking_tokens": 64}},
    {"promptTokenCount": 1200, "cachedContentTokenCount": 1000, "candidatesTokenCount": 236, "thoughtsTokenCount": 64,
     "totalTokenCount": 1500},
    {"prompt_token_count": 1200, "cached_content_token_count": 1000, "candidates_token_count": 236,
     "thoughts_token_count": 64, "total_token_count": 1500},
    {"input_tokens": 1200, "output_tokens": 300, "total_tokens": 1500,
     "input_token_details": {"cache_read": 1000}, "output_token_details": {"reasoning": 64}},
], ids=["openai-chat", "openai-responses", "anthropic", "gemini-rest", "google-genai", "langchain"])
def test_each_providers_counts_of_one_call_read_as_the_same_usage(raw):
    from levelfield._core.data.token_counts import usage_from_counts

    usage = usage_from_counts(raw)
    assert usage.model_dump(exclude={"cache_write_tokens"}) == SAME_CALL.model_dump(exclude={"cache_write_tokens"})
    assert usage.cache_write_tokens in (None, 0)
