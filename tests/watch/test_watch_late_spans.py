"""Late child spans in ``levelfield watch``: a root span that arrives before its child, over real
OTLP/HTTP to a watcher on 127.0.0.1. Within the grace the child is scored with its trace; after it,
the trace is scored without it and the late span is counted and marked under its trace."""

from __future__ import annotations

import json

import pytest

import levelfield as lf
from levelfield._core.errors import ConfigError

pytest.importorskip("opentelemetry.proto")
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from levelfield.watch import Watcher  # noqa: E402
from levelfield.watch.assembly import Assembler  # noqa: E402
from levelfield.watch.summary import format_watch_summary, summarize  # noqa: E402
from levelfield.watch.windows import window_files  # noqa: E402
from tests.watch.test_watch import METRICS, agent_trace, post, wait_for  # noqa: E402


def _root_and_child(i: int) -> tuple[bytes, bytes]:
    """One agent trace's root span and its tool-call child, each as an OTLP/HTTP protobuf body."""
    exp = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exp))
    agent_trace(provider.get_tracer("t"), i)
    spans = exp.get_finished_spans()
    root = [s for s in spans if s.parent is None]
    child = [s for s in spans if s.parent is not None]
    assert len(root) == 1 and len(child) == 1
    return encode_spans(root).SerializeToString(), encode_spans(child).SerializeToString()


def _tools(out) -> list[list[str]]:
    cases = lf.EvalResult.load(window_files(out)[0]).dataset
    return [[c.tool_name for c in case.predicted_trajectory] for case in cases]


def test_a_child_that_comes_after_its_root_within_the_grace_is_scored_with_its_trace(tmp_path):
    root, child = _root_and_child(1)
    # A grace of 3 s: the child is posted at once, but a loaded machine may take a second to make the next request.
    with Watcher(METRICS, tmp_path / "out", otlp_port=0, trace_timeout=30, late_grace=3.0) as w:
        url = f"http://127.0.0.1:{w.port}/v1/traces"
        assert post(url, root).status_code == 200
        assert post(url, child).status_code == 200  # at once: well within the grace
        wait_for(lambda: w.stats.scored_traces == 1)
        assert w.stats.late_spans == 0 and w.stats.late_traces == 0
    assert _tools(tmp_path / "out") == [["set_light"]]  # the child's tool call is in the scored trace
    assert not (tmp_path / "out" / "late_spans.jsonl").exists()


def test_a_child_that_comes_after_the_grace_is_marked_late_on_its_scored_trace(tmp_path):
    root, child = _root_and_child(2)
    with Watcher(METRICS, tmp_path / "out", otlp_port=0, trace_timeout=30, late_grace=0.2) as w:
        url = f"http://127.0.0.1:{w.port}/v1/traces"
        assert post(url, root).status_code == 200
        wait_for(lambda: w.stats.scored_traces == 1)  # the grace passed: scored without its child
        assert post(url, child).status_code == 200
        wait_for(lambda: w.stats.late_spans == 1)
        assert w.stats.late_traces == 1
        trace_id = lf.EvalResult.load(window_files(tmp_path / "out")[0]).dataset[0].case_id
        w.write_status()
    assert _tools(tmp_path / "out") == [[]]
    marks = [json.loads(line) for line in (tmp_path / "out" / "late_spans.jsonl").read_text().splitlines()]
    assert [(m["trace_id"], m["late_spans"]) for m in marks] == [(trace_id, 1)]
    summary = summarize(tmp_path / "out")
    assert summary.late == {trace_id: 1}
    assert "Late spans: 1 span(s) of 1 trace(s)" in format_watch_summary(summary)


def test_the_grace_is_range_checked_and_defaults_to_two_seconds_or_the_trace_timeout(tmp_path):
    for bad in (-1, "2", True, 301):
        with pytest.raises(ConfigError, match="late_grace"):
            Watcher(METRICS, tmp_path / "out", otlp_port=0, late_grace=bad)
    with pytest.raises(ConfigError, match="trace_timeout"):
        Watcher(METRICS, tmp_path / "out", otlp_port=0, trace_timeout=1, late_grace=5)
    assert Watcher(METRICS, tmp_path / "out", otlp_port=0).late_grace == 2.0
    assert Watcher(METRICS, tmp_path / "out", otlp_port=0, trace_timeout=0.5).late_grace == 0.5


def test_the_assembler_holds_a_rooted_trace_for_the_grace_then_completes_it():
    from levelfield.formats.spans import Span

    def span(sid: str, parent: str | None) -> Span:
        return Span(trace_id="t", span_id=sid, parent_id=parent, name=sid)

    a = Assembler(timeout=30, grace=2)
    assert a.add([span("root", None)], now=100.0) == []
    assert a.expire(101.0) == []
    assert a.add([span("child", "root")], now=101.5) == []  # late child, within the grace
    (trace,) = a.expire(102.0)
    assert set(trace.spans) == {"root", "child"} and not trace.timed_out
    assert len(a) == 0
    no_grace = Assembler(timeout=30)
    (done,) = no_grace.add([span("root", None)], now=100.0)  # grace 0: complete when the root comes
    assert done.has_root
