"""``levelfield watch`` per-route sampling rules: traces pushed by the real OpenTelemetry SDK over
OTLP/HTTP, each span in its own request and the root (which carries ``http.route``) last; the
expected sample is computed here from the trace ids, the way OpenTelemetry's ratio sampler does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from levelfield._core.errors import ConfigError
from levelfield.watch import Watcher
from levelfield.watch.sampling import SampleRule
from tests.conftest import mlflow_store

pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from tests.watch.test_watch import PROMPTS, journaled, post, wait_for  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
METRICS = ["response_match_score"]
RULES = ["route=/checkout:1.0", "agent=support*:0.25", "service=billing-*:0"]
DEFAULT = 0.1


def request(tracer, i: int, route: str, agent: str) -> None:
    """One HTTP request served by an agent: a server span (http.route) around an agent span around a tool span."""
    with tracer.start_as_current_span(f"POST {route}") as server:
        server.set_attribute("http.route", route)
        with tracer.start_as_current_span(f"invoke_agent {agent}") as span:
            span.set_attribute("gen_ai.operation.name", "invoke_agent")
            span.set_attribute("gen_ai.agent.name", agent)
            span.set_attribute("gen_ai.input.messages", json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": PROMPTS[i % len(PROMPTS)]}]}], ensure_ascii=False))
            with tracer.start_as_current_span("execute_tool lookup") as tool:
                tool.set_attribute("gen_ai.operation.name", "execute_tool")
                tool.set_attribute("gen_ai.tool.name", "lookup")
            span.set_attribute("gen_ai.output.messages", json.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": "Erledigt. 完了"}]}], ensure_ascii=False))


TRAFFIC = [("/checkout", "checkout"), ("/checkout", "support-eu"), ("/help", "support-eu"), ("/help", "faq"),
           ("/orders/{id}", "faq")]


def expected_rate(route: str, agent: str, service: str) -> float:
    """The rules by hand: the first that matches wins, else the default."""
    if route == "/checkout":
        return 1.0
    if agent.startswith("support"):
        return 0.25
    if service.startswith("billing-"):
        return 0.0
    return DEFAULT


def in_sample(trace_id: int, rate: float) -> bool:
    return (trace_id & (2**64 - 1)) < rate * 2**64


def providers(port: int | None, mem: InMemorySpanExporter) -> list[tuple[str, TracerProvider]]:
    """Two services; each span is sent in a request of its own as it ends (so the root comes last)."""
    out = []
    for service in ("shop", "billing-eu"):
        provider = TracerProvider(resource=Resource.create({"service.name": service}))
        if port is not None:
            provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces", timeout=60)))
        provider.add_span_processor(SimpleSpanProcessor(mem))
        out.append((service, provider))
    return out


def send(port: int, n: int) -> tuple[set[str], int]:
    """``n`` requests per service over the traffic mix; returns (the trace ids the rules keep, traces sent)."""
    mem = InMemorySpanExporter()
    chosen, sent = set(), 0
    made = providers(port, mem)
    for _service, provider in made:
        tracer = provider.get_tracer("app")
        for i in range(n):
            route, agent = TRAFFIC[i % len(TRAFFIC)]
            request(tracer, i, route, agent)
    for span in mem.get_finished_spans():
        if span.parent is None:
            sent += 1
            rate = expected_rate(span.attributes["http.route"], _agent_of(mem, span.context.trace_id),
                                 span.resource.attributes["service.name"])
            if in_sample(span.context.trace_id, rate):
                chosen.add(f"{span.context.trace_id:032x}")
    for _, provider in made:
        provider.shutdown()
    assert sent == 2 * n
    return chosen, sent


def _agent_of(mem: InMemorySpanExporter, trace_id: int) -> str:
    return next(s.attributes["gen_ai.agent.name"] for s in mem.get_finished_spans()
                if s.context.trace_id == trace_id and "gen_ai.agent.name" in (s.attributes or {}))


def test_the_first_matching_rule_sets_the_rate_and_the_rest_get_the_default(tmp_path):
    with Watcher(METRICS, tmp_path / "out", otlp_port=0, sample=DEFAULT, sample_rules=RULES, trace_timeout=30,
                 fsync=False) as w:
        chosen, sent = send(w.port, 150)
        wait_for(lambda: w.stats.scored_traces + w.stats.sampled_out_traces >= sent)
    scored = {tid for tid, _ in journaled(tmp_path / "out")}
    assert scored == chosen
    assert w.stats.scored_traces == len(chosen) and w.stats.sampled_out_traces == sent - len(chosen)
    assert w.stats.timed_out_traces == 0  # decided when the root came, not by waiting


def test_traces_no_rule_could_keep_are_dropped_on_arrival_and_counted_once(tmp_path):
    """Rules at most 0.5: the spans of a trace whose id is above every rate are not even kept."""
    with Watcher(METRICS, tmp_path / "out", otlp_port=0, sample=DEFAULT, sample_rules=["agent=support*:0.5"],
                 trace_timeout=30, fsync=False) as w:
        mem = InMemorySpanExporter()
        made = providers(w.port, mem)
        for i in range(100):
            request(made[0][1].get_tracer("app"), i, *TRAFFIC[i % len(TRAFFIC)])
        roots = [s for s in mem.get_finished_spans() if s.parent is None]
        wait_for(lambda: w.stats.scored_traces + w.stats.sampled_out_traces >= len(roots))
        assert w.pending == 0  # nothing left open: the dropped traces' spans were never put together
        for _, provider in made:
            provider.shutdown()
    chosen = {f"{r.context.trace_id:032x}" for r in roots if in_sample(
        r.context.trace_id, 0.5 if _agent_of(mem, r.context.trace_id).startswith("support") else DEFAULT)}
    assert {tid for tid, _ in journaled(tmp_path / "out")} == chosen
    assert w.stats.sampled_out_traces == len(roots) - len(chosen)


def test_the_decision_is_made_once_per_trace_and_survives_a_restart(tmp_path):
    """Children in one run, roots after a restart: the spooled spans keep the attributes the rules read."""
    mem = InMemorySpanExporter()
    for _, provider in providers(None, mem):
        tracer = provider.get_tracer("app")
        for i in range(40):
            request(tracer, i, *TRAFFIC[i % len(TRAFFIC)])
    spans = mem.get_finished_spans()
    children = [s for s in spans if s.parent is not None]
    roots = [s for s in spans if s.parent is None]
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    chosen = {f"{r.context.trace_id:032x}" for r in roots
              if in_sample(r.context.trace_id, expected_rate(r.attributes["http.route"], _agent_of(mem, r.context.trace_id),
                                                             r.resource.attributes["service.name"]))}
    with Watcher(METRICS, tmp_path / "out", otlp_port=0, sample=DEFAULT, sample_rules=RULES, trace_timeout=60) as w:
        r = post(f"http://127.0.0.1:{w.port}/v1/traces", encode_spans(children).SerializeToString())
        assert r.status_code == 200
        assert w.stats.scored_traces == 0 and w.stats.sampled_out_traces == 0  # nothing decided without the roots
    with Watcher(METRICS, tmp_path / "out", otlp_port=0, sample=DEFAULT, sample_rules=RULES, trace_timeout=60) as w:
        r = post(f"http://127.0.0.1:{w.port}/v1/traces", encode_spans(roots).SerializeToString())
        assert r.status_code == 200
        wait_for(lambda: w.stats.scored_traces + w.stats.sampled_out_traces == len(roots))
    assert {tid for tid, _ in journaled(tmp_path / "out")} == chosen
    assert not list((tmp_path / "out" / "spool").glob("*.bin"))  # sampled-out traces hold no spool either


def test_rules_match_mlflow_trace_names_and_tags(tmp_path, monkeypatch):
    mlflow = pytest.importorskip("mlflow")
    with mlflow_store(tmp_path / "mlflow.db") as uri:
        mlflow.set_experiment("production")

        @mlflow.trace(name="checkout_agent", span_type="AGENT")
        def checkout(request: str) -> str:
            return "Bestellung abgeschlossen."

        @mlflow.trace(name="faq_agent", span_type="AGENT")
        def faq(request: str, tier: str) -> str:
            mlflow.update_current_trace(tags={"customer.tier": tier})
            return "Siehe FAQ."

        kept, dropped = [], []
        for prompt in PROMPTS:
            checkout(prompt)
            kept.append(mlflow.get_last_active_trace_id())
            faq(prompt, "gold")
            kept.append(mlflow.get_last_active_trace_id())
            faq(prompt, "basic")
            dropped.append(mlflow.get_last_active_trace_id())
        with Watcher(METRICS, tmp_path / "out", otlp_port=None, mlflow_experiment="production", mlflow_tracking_uri=uri,
                     export_mlflow=False, sample=0.0, sample_rules=["name=checkout_*:1", "customer.tier=gold:1"],
                     poll=0.1) as w:
            wait_for(lambda: w.stats.scored_traces + w.stats.sampled_out_traces == len(kept) + len(dropped))
    assert sorted(tid for tid, _ in journaled(tmp_path / "out")) == sorted(kept)
    assert w.stats.sampled_out_traces == len(dropped)


@pytest.mark.parametrize("rule", ["route:/checkout", "route=/checkout", "route=/checkout:1.5", "route=/checkout:high",
                                  "=/checkout:0.1", "route=:0.1", "route=/checkout:-0.1"])
def test_a_bad_rule_is_a_config_error_naming_it_and_the_expected_form(tmp_path, rule):
    with pytest.raises(ConfigError) as info:
        Watcher(METRICS, tmp_path / "out", otlp_port=0, sample_rules=["agent=support:0.05", rule])
    assert f"sample rule {rule!r}" in str(info.value) and "expected KEY=PATTERN:RATE" in str(info.value)
    assert not (tmp_path / "out").exists()


def test_rule_parts_values_with_colons_and_short_names():
    rule = SampleRule.parse("url.full=http://shop:8080/*:0.5")
    assert (rule.key, rule.pattern, rule.rate) == ("url.full", "http://shop:8080/*", 0.5)
    assert rule.matches({"url.full": ["http://shop:8080/cart"]}) and not rule.matches({"url.full": ["http://shop:9090/"]})
    route = SampleRule.parse("route=/checkout*:1")
    assert route.matches({"http.route": {"/checkout/pay"}}) and route.matches({"route": {"/checkout"}})
    assert not route.matches({"http.route": {"/help"}}) and not route.matches({"name": {"/checkout"}})
    assert SampleRule.parse("agent=Kundendienst-北:0.3").matches({"gen_ai.agent.name": {"Kundendienst-北"}})


def test_the_cli_takes_sample_rules_and_names_a_bad_one(tmp_path):
    done = subprocess.run([sys.executable, "-m", "levelfield", "watch", "--out", str(tmp_path / "o"), "--otlp-port", "0",
                           "--sample", "0.1", "--sample-rule", "route=/checkout:1.0", "--sample-rule", "agent=support"],
                          check=False, capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2
    assert "levelfield watch: sample rule 'agent=support': expected KEY=PATTERN:RATE" in done.stderr
